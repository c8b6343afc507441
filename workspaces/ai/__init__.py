"""AI for the workspace jobs: facts read from the recorded data, the registered workflows,
and how a model's answer is kept. The models themselves are ``language_models``'."""
