# oh's .zprofile for a login zsh that an `exec zsh -l` in the agent's shell started (oh's ZDOTDIR, see
# zshenv.zsh): the user's .zprofile from their ZDOTDIR (or HOME), then back for oh's .zshrc.
ZDOTDIR=$__oh_user_zd
[[ -r $ZDOTDIR/.zprofile ]] && builtin source $ZDOTDIR/.zprofile
ZDOTDIR=$__oh_zd
