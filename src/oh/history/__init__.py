"""History and undo (issue 29): the recorder's I/O. ``timeline`` (entries, drains, the journal),
``store`` (the content pack), ``tree`` (ignores, walk, one file's state), ``watch`` (inotify), ``undo``
(diff, three-way merge, revert). The decisions are ``oh.protocol.history``'s."""
