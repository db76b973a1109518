IFS= builtin read -r -d '' -u $__oh_fd __oh_cmd
__oh_ran=1
__oh_hooks
builtin printf '\e]6973;%s;S\a' "$__oh_n" >&$__oh_m
__oh_ret "${__oh_last:-0}" && :  # (in an && list: `set -e` does not fire on it)
builtin eval "$__oh_cmd"
__oh_keep $? && :  # (status passed on; in an && list, so `set -e` and ERR traps do not fire on it)
