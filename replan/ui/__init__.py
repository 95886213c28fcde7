"""`replan ui`: a local page over a database of runs (`serving`: the command; `server`: the
HTTP server, its token and checks; `reader`: what the page shows, read from checkpoints;
`page.html`: the page itself, shipped in the package)."""
