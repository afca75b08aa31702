"""The line of a config key an error names (``config.load.locate_key``), in the TOML shapes a user writes."""

from __future__ import annotations

from beluga_core.config.load import locate_key

TEXT = """name = "x"
methods = ["focal", "lora"]
method.focal.gamma = 11.0
sizes.iid_train = 5
[method."devplug:Half"]
scale = 2.0
[method.lora]
r = 0
[[tasks]]
name = "a"
[[tasks]]
name = "b"
"""


def test_a_dotted_key_and_a_quoted_table_name_have_their_lines() -> None:
    assert locate_key(TEXT, ("method", "focal", "gamma")) == 3
    assert locate_key(TEXT, ("sizes", "iid_train")) == 4
    assert locate_key(TEXT, ("method", "devplug:Half", "scale")) == 6   # not the previous table's line
    assert locate_key(TEXT, ("method", "lora", "r")) == 8
    assert locate_key(TEXT, ("methods", 1)) == 2
    assert locate_key(TEXT, ("tasks", 1, "name")) == 12
    assert locate_key(TEXT, ("nope", "x")) is None
