"""``python -m omnimem.cli``: the same command as the ``omnimem`` script."""

from omnimem.cli.commands import main

main()
