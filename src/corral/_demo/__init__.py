"""`corral demo`: a bundled sample project and the scripted run that fixes it."""
