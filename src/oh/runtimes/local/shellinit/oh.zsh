# oh's .zshrc for the agent's zsh (docs/protocol.md §3.4.1), after a header that oh writes per shell:
# __oh_n (the marker nonce), __oh_fd (the fd of the private command pipe), __oh_run, __oh_snap.
ZDOTDIR=$__oh_user_zd
builtin unset __oh_user_zd __oh_zd
__oh_rcst=0; if [[ -r $ZDOTDIR/.zshrc ]]; then builtin source $ZDOTDIR/.zshrc; __oh_rcst=$?; fi
builtin exec {__oh_m}>&2
if [[ -o errexit || -o nounset ]]; then __oh_eu=1; else __oh_eu=; fi
builtin unsetopt errexit nounset zle notify prompt_sp prompt_cr check_jobs check_running_jobs
builtin setopt monitor
builtin unset HISTFILE
PS2=
__oh_ran=
__oh_pc() {
  builtin local __oh_st=$?
  if [[ -n ${__oh_ran-} ]]; then
    __oh_ran=
    [[ -n $__oh_snap ]] && builtin export -p >| "$__oh_snap" 2>/dev/null
  fi
  __oh_last=$__oh_st
  builtin printf '\e]6973;%s;D;%s\x1f%s\x1f%s\a' "$__oh_n" "$__oh_st" "$PWD" "$PATH" >&$__oh_m
  builtin return $__oh_st
}
__oh_ret() { builtin return "$1"; }  # the previous command's $? for the next one, as in a terminal
__oh_x() { (( ZSH_SUBSHELL )) || builtin printf '\e]6973;%s;X;%s\x1f%s\a' "$__oh_n" "$?" "$PWD" >&$__oh_m; }
builtin typeset -ga precmd_functions zshexit_functions
__oh_hooks() {
  # zsh runs a function named precmd before precmd_functions: keep ours first by moving it into the array.
  if (( $+functions[precmd] )); then
    functions[__oh_user_precmd]=$functions[precmd]
    builtin unfunction precmd
    precmd_functions=(__oh_user_precmd ${precmd_functions:#__oh_user_precmd})
  fi
  [[ ${precmd_functions[1]-} == __oh_pc ]] || precmd_functions=(__oh_pc ${precmd_functions:#__oh_pc})
}
# Again after each command (run.zsh): one that empties precmd_functions must not take away the end marker.
__oh_keep() { __oh_hooks; builtin return "${1:-0}"; }
__oh_hooks
zshexit_functions+=(__oh_x)
builtin printf '\e]6973;%s;R;%s;%s\a' "$__oh_n" "$__oh_eu" "${__oh_rcst:-0}" >&$__oh_m
