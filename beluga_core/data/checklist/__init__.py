"""CheckList import: a restricted unpickler for CheckList ``TestSuite`` pickles and a converter to beluga suites.

``import_checklist(path)`` reads a release tarball (or the pickle inside it) without running any pickled
code and returns the beluga ``SuiteHeader`` and ``Case`` list; ``beluga suite import-checklist`` writes it.
"""

from beluga_core.data.checklist.importer import ImportResult, import_checklist, read_checklist_file
from beluga_core.data.checklist.unpickler import DisallowedGlobalError, RestrictedUnpickler, load_pickle

__all__ = ["DisallowedGlobalError", "ImportResult", "RestrictedUnpickler", "import_checklist", "load_pickle",
           "read_checklist_file"]
