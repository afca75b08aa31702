"""Token attributions: which input tokens a model relied on (the attribution plugin kind's built-in estimators,
the model side they read, and attributing the cases of a run or of `beluga explain`)."""
