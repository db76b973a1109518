# oh's .zshenv for the agent's zsh (ZDOTDIR points at oh's private directory): read the user's .zshenv
# from their ZDOTDIR (or HOME), then come back for oh's .zshrc.
__oh_zd=$ZDOTDIR
ZDOTDIR=${OH_USER_ZDOTDIR:-$HOME}
builtin unset OH_USER_ZDOTDIR
[[ -r $ZDOTDIR/.zshenv ]] && builtin source $ZDOTDIR/.zshenv
__oh_user_zd=$ZDOTDIR
ZDOTDIR=$__oh_zd
