# oh's init for the agent's bash (docs/protocol.md §3.4.1), read as `bash --rcfile` after a header that
# oh writes per shell: __oh_n (the marker nonce), __oh_in (the fd of the private command pipe), __oh_run,
# __oh_snap, __oh_dbgf (file paths) and __oh_user_rc (1: read the user's rc files first).
# Job control from the start: a job the rc files start in the background gets a process group of its own.
# Without it the job shares the shell's group, and on a hangup bash's SIGHUP to its jobs hits bash itself,
# which then dies before its EXIT trap runs (an rc's lock file would stay behind).
builtin set -m
if [[ -n ${__oh_user_rc-} ]]; then
  [ -r /etc/bash.bashrc ] && builtin source /etc/bash.bashrc
  __oh_rcst=0; if [ -r "$HOME/.bashrc" ]; then builtin source "$HOME/.bashrc"; __oh_rcst=$?; fi
fi
# Markers go to a private dup of the tty (a command's `exec >&-` cannot silence them); the command pipe
# moves to a high fd bash picks, out of the way of a script's own `exec 3<file`.
builtin exec {__oh_m}>&2 {__oh_fd}<&"$__oh_in" {__oh_in}<&-
case $- in *e*|*u*) __oh_eu=1;; *) __oh_eu=;; esac
builtin set +e +u +o emacs +o vi +o history +b -m
builtin unset HISTFILE
builtin shopt -s expand_aliases
PS2=
__oh_ran=
__oh_pc() {
  builtin local __oh_st=$? __oh_r=${__oh_ran-}
  __oh_ran=
  [[ -n $__oh_r && -n $__oh_snap ]] && builtin export -p >| "$__oh_snap" 2>/dev/null
  __oh_last=$__oh_st
  builtin printf '\e]6973;%s;D;%s\x1f%s\x1f%s\a' "$__oh_n" "$__oh_st" "$PWD" "$PATH" >&$__oh_m
  [[ -n $__oh_r && -s $__oh_dbgf ]] && builtin source "$__oh_dbgf"
  builtin return $__oh_st
}
__oh_ret() { builtin return "$1"; }  # the previous command's $? for the next one, as in a terminal
# Our hook first in PROMPT_COMMAND, before a command and again after it: a command that unsets or
# replaces PROMPT_COMMAND (or makes it an empty array) must not take away the end marker, or the
# command would look unfinished until its timeout. The command's status passes through.
__oh_keep() {
  case ${PROMPT_COMMAND-} in __oh_pc\;*) ;; *) PROMPT_COMMAND="__oh_pc;${PROMPT_COMMAND-}";; esac
  builtin return "${1:-0}"
}
__oh_x() { builtin printf '\e]6973;%s;X;%s\x1f%s\a' "$__oh_n" "$?" "$PWD" >&$__oh_m; }
[[ -z $(builtin trap -p EXIT) ]] && builtin trap __oh_x EXIT
__oh_keep
builtin printf '\e]6973;%s;R;%s;%s\a' "$__oh_n" "$__oh_eu" "${__oh_rcst:-0}" >&$__oh_m
