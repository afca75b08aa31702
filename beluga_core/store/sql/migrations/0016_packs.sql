-- Migration 16: the pack a model trained in (`[executor] pack`, issue 40).
--
-- pack: JSON {"setting": the config's [executor] pack ("auto" or a number), "members": the job ids that trained
-- together, this one among them, in the pack's order}. NULL for a model that trained alone (pack = 1, a method or
-- task that does not pack) and for models recorded before this migration. A packed model's figures equal its
-- sequential training's up to float rounding (README, "Speed and scale"); its id does not say how it trained.
ALTER TABLE models ADD COLUMN pack JSON;
ALTER TABLE grid_points ADD COLUMN pack JSON;
