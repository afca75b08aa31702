"""The four training configurations of BeLUGA and the update of the i.i.d. model, as plugins (docs/method.md,
"Training configurations")."""

from __future__ import annotations

from beluga_core.contracts.configurations import TrainingConfiguration


class IID(TrainingConfiguration):
    """The pretrained model fine-tuned on D_train only: the baseline."""

    start = "plm"
    uses_iid = True
    uses_suite = False


class IIDThenT(TrainingConfiguration):
    """IID→T: the IID model, fine-tuned further on the fold's suite cases."""

    start = "iid"
    uses_iid = False
    uses_suite = True


class IIDPlusT(TrainingConfiguration):
    """IID+T: the pretrained model fine-tuned on D_train together with the fold's suite cases."""

    start = "plm"
    uses_iid = True
    uses_suite = True


class IIDThenIIDPlusT(TrainingConfiguration):
    """IID→(IID+T): the IID model, fine-tuned further on D_train together with the fold's suite cases."""

    start = "iid"
    uses_iid = True
    uses_suite = True


class IIDUpdate(TrainingConfiguration):
    """An update of the i.i.d. model: D_train only, with the run's method applied (the regression paper's
    setting; DiagnoseRE's de-biased training), from the pretrained model — or, with
    ``[training.configurations.iid-update] start = "iid"``, from the run's IID model. Not a baseline: one model
    per seed and method, scored on D_test and all of T_test (scenario ``standard``)."""

    start = "plm"
    uses_iid = True
    uses_suite = False
    baseline = False
