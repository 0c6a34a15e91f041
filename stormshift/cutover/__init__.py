"""Cut-over and hand-back between a legacy topology and its port (runs in the CLI process).

The last step of a migration is a transaction across two systems: where the legacy's
input stands and what its state holds must move to the port together, and back.
``plan.py`` is the pure part (the config, the seed's value mapping, the position
arithmetic, the refusal rule); ``legacy.py`` reads and writes the legacy's side (its
consumer group, position store and state store); ``attrs.py`` splits a seeded dict attribute over the bolt's tasks
by its fields grouping (and merges it back); ``seed.py`` writes the port's state in
one transaction; ``record.py`` keeps the cut-over record beside the state; ``port.py``
says where the port stands. The commands are ``cli/cutover.py``.
"""
