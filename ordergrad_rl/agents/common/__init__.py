"""The machinery every OrderGrad algorithm shares: arguments and defaults, the advantage step, episodic collection,
buffers, policies, callbacks, evaluation, risk logging, groups, saving and SB3 compatibility (one idea per module)."""
