"""Stored models: a model the store kept, loaded back to export it as a checkpoint, explain its predictions,
or attack it (``suite generate``'s target).

Above the store and the layers that train and attribute; beside ``analysis``, which reads views only."""
