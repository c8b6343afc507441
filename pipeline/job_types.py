"""The names of the pipeline's job types, each spelled once: ``pipeline/tasks.py`` declares
its types under these, and intake, the sweeper, the switch, the index, the signals, the
admin and the demo enqueue and look jobs up by them. (The declarations cannot be imported
there: they import those modules.) The names are stored in rows, so never rename one; add
a new name."""

PROCESS_EMAIL = "email.process"
SWEEP_EMAILS = "email.sweep"
COMPLETE_INDEX = "index.complete"
REBUILD_INDEX = "index.rebuild"
FORGET_EMAIL = "index.forget"
