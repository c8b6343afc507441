"""AI for the workspace jobs: a small text-generator interface and the registered workflows."""
