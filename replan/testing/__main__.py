"""`python -m replan.testing --port-file F --responder module:function`: the scripted server as
its own process (see `replan.testing.server.main`)."""

from replan.testing.server import main

main()
