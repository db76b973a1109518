"""The observation key sets OpenHands 1.6's deserializer accepts (../shared/reference/openhands-events.md).

One copy for every suite that checks shapes: an extra key in `extras` makes OpenHands raise TypeError.
"""

REFERENCE_EXTRAS = {
    "run": {"command", "metadata", "hidden"},
    "read": {"path", "impl_source"},
    "write": {"path"},
    "edit": {"path", "prev_exist", "old_content", "new_content", "impl_source", "diff", "_diff_cache"},
    "error": {"error_id"},
}
REFERENCE_RUN_METADATA = {
    "exit_code",
    "pid",
    "username",
    "hostname",
    "working_dir",
    "py_interpreter_path",
    "prefix",
    "suffix",
}
REFERENCE_TOP = {"timestamp", "source", "message", "observation", "content", "extras", "cause"}
