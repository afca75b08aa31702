"""The base of every config section's model: a key the model does not declare is an error naming it, so that a
misspelt key fails the config instead of being ignored."""

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")
