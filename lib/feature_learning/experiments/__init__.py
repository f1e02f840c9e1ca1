"""One module per chapter: its sizes per profile (``book`` written out, ``ci`` and ``full`` as overrides of it), its
recipes and the runs its notebook calls. Shared concepts live in the concept folders (``data``, ``models``,
``training``, ``measure``, ``theory``); a chapter module composes them and never re-implements one."""
