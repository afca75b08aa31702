"""The four training configurations of BeLUGA, as plugins (docs/method.md, "Training configurations")."""

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
