"""Developer tools of this repository, not of the installed package: what builds its docs (``docs_reference``, the
entry point, and the pages' modules it runs: ``config_page``, ``plugin_api_page``, over ``markdown_text``), its
package data (``tools.data``) and its tests' fixtures (``tools.fixtures``).

Run as modules from the repository root (``python -m tools.docs_reference``); tests import them normally. No runtime
module of ``beluga_core`` imports them, and they import nothing of ``benchmarks``.
"""
