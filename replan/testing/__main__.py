"""`python -m replan.testing`: the scripted server as its own process
(`replan.testing.command.main`)."""

from replan.testing.command import main

main()
