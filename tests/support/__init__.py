"""Code the tests share: waiting with deadlines, worker processes, database sessions, job
states, servers that misbehave. Fixtures stay in the ``conftest.py`` files."""
