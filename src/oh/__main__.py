"""``python -m oh``: the same as the ``oh`` console script."""

from oh.cli import main

if __name__ == "__main__":
    main()
