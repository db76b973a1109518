# oh's init for the agent's bash (docs/protocol.md §3.4.1), read as `bash --rcfile` after a header that
# oh writes per shell: __oh_n (the marker nonce), __oh_in (the fd of the private command pipe), __oh_run,
# __oh_snap, __oh_dbgf, __oh_init (file paths: __oh_init is this file), __oh_bootpc (the boot line, below)
# and __oh_user_rc (1: read the user's rc files first).
# Also sourced, as "the boot", by a bash that an `exec` in the agent's shell started (`exec bash`, `exec bash
# -l`, `exec env X=1 bash`): the `exec` alias below hands that one process __oh_boot ("<pid> <command fd>
# <marker fd> <token> <this file>"; the private fds survive the exec) and a one-time PROMPT_COMMAND that
# sources this file; if the user's rc files replaced PROMPT_COMMAND, oh types that line at the new shell's
# prompt (it finds the shell by the token in its environment).
if [[ -n ${__oh_boot-} ]]; then
  builtin read -r __oh_bpid __oh_fd0 __oh_m0 __oh_b <<<"$__oh_boot"
  builtin unset __oh_boot __oh_b
  PROMPT_COMMAND=${PROMPT_COMMAND//"$__oh_bootpc"/}
  PROMPT_COMMAND=${PROMPT_COMMAND#"${PROMPT_COMMAND%%[!;[:space:]]*}"}  # (and the `;` an rc put after it)
  builtin export -n PROMPT_COMMAND  # from the environment: nested shells must not inherit it
  if [[ $__oh_bpid != "$$" ]]; then
    # A shell that a program the agent exec'd started later (another process): no hooks, no markers; its
    # DEBUG trap back as its rc files set it.
    builtin eval "${__oh_t-}"
    builtin unset __oh_bpid __oh_fd0 __oh_m0 __oh_t __oh_n __oh_in __oh_run __oh_snap __oh_dbgf __oh_init
    builtin unset __oh_bootpc __oh_user_rc
    builtin return 0
  fi
  # The private fds opened anew (through /proc): a login bash marks the fds it inherited close-on-exec, and
  # bash's own dup (`>&N`) copies that mark, so the next `exec` would lose them. (`command exec`, not
  # `builtin exec`: bash undoes the redirections of `builtin exec`.)
  if [[ -w /proc/self/fd/$__oh_m0 && -r /proc/self/fd/$__oh_fd0 ]]; then
    \command exec {__oh_m}>"/proc/self/fd/$__oh_m0" {__oh_fd}<"/proc/self/fd/$__oh_fd0"
  else
    \command exec {__oh_m}>&"$__oh_m0" {__oh_fd}<&"$__oh_fd0"
  fi
  \command exec {__oh_m0}>&- {__oh_fd0}<&-
  builtin unset __oh_m0 __oh_fd0
  # The DEBUG trap the new rc files set, saved by the boot line: put back after the end marker (__oh_pc).
  builtin printf %s "${__oh_t-}" >|"$__oh_dbgf"
  builtin unset __oh_t
  # Output since the `exec` (the new rc files' banner, hooks, a prompt) was the startup's: not the command's.
  builtin printf '\e]6973;%s;B\a' "$__oh_n" >&$__oh_m
else
  # Job control from the start: a job the rc files start in the background gets a process group of its own.
  # Without it the job shares the shell's group, and on a hangup bash's SIGHUP to its jobs hits bash itself,
  # which then dies before its EXIT trap runs (an rc's lock file would stay behind).
  builtin set -m
  if [[ -n ${__oh_user_rc-} ]]; then
    [ -r /etc/bash.bashrc ] && builtin source /etc/bash.bashrc
    __oh_rcst=0; if [ -r "$HOME/.bashrc" ]; then builtin source "$HOME/.bashrc"; __oh_rcst=$?; fi
  fi
  # Markers go to a private dup of the tty (a command's `exec >&-` cannot silence them); the command pipe
  # moves to a high fd bash picks, out of the way of a script's own `exec 3<file`. `command exec`, not
  # `builtin exec`: bash undoes the redirections of `builtin exec` (the pipe's first fd stayed open).
  \command exec {__oh_m}>&2 {__oh_fd}<&"$__oh_in" {__oh_in}<&-
fi
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
# `exec <program>` typed by the agent: the E marker says an exec may follow (oh holds the output back from
# here: a shell that boots drops it), and the program's environment, for it only, carries the boot. An alias,
# not a function: `exec 3<file` and `exec >log` must keep their redirections (a function's are undone).
__oh_e() {
  builtin local t=$RANDOM$RANDOM
  builtin printf '\e]6973;%s;E;%s\a' "$__oh_n" "$t" >&$__oh_m
  builtin printf %s "$t"
}
builtin alias exec='__oh_boot="$$ $__oh_fd $__oh_m $(__oh_e) $__oh_init" PROMPT_COMMAND=$__oh_bootpc exec'
__oh_keep
if [[ -n ${__oh_bpid-} ]]; then
  builtin unset __oh_bpid
  __oh_ran=1
  __oh_ret 0 && __oh_pc  # the end of the `exec` command: exit code 0, the new shell's cwd and exports
else
  builtin printf '\e]6973;%s;R;%s;%s\a' "$__oh_n" "$__oh_eu" "${__oh_rcst:-0}" >&$__oh_m
fi
