"""CheckList import: a restricted unpickler for CheckList ``TestSuite`` pickles and a converter to beluga suites.

``import_checklist(path)`` reads a release tarball (or the pickle inside it) without running any pickled
code and returns the beluga ``SuiteHeader`` and ``Case`` list; ``beluga suite import-checklist`` writes it.

Modules, in data-flow order: ``unpickler`` (the restricted unpickler) and ``standins`` (the inert objects
it builds instead of code and CheckList objects); ``reading`` (tarball / pickle → ``LoadedSuite`` → one
``RawTest`` per test); ``fingerprint`` (fingerprints of the inert expectation functions); ``specs`` (each
test's expectation: the vendored table of the release suites, or ``--expectations``); ``convert`` (tests →
``Case`` records, and the ``SuiteHeader``); ``importer`` (the steps together).
"""

from beluga_core.data.checklist.importer import ImportResult, convert_suite, import_checklist
from beluga_core.data.checklist.reading import read_checklist_file
from beluga_core.data.checklist.specs import TestSpec, load_expectations_file
from beluga_core.data.checklist.unpickler import DisallowedGlobalError, RestrictedUnpickler, load_pickle

__all__ = ["DisallowedGlobalError", "ImportResult", "RestrictedUnpickler", "TestSpec", "convert_suite",
           "import_checklist", "load_expectations_file", "load_pickle", "read_checklist_file"]
