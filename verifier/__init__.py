"""The verifier (paper §3.5): the environment whose verdict every reward and report rests on."""
