"""The paper's experiments, reproduced with the toolkit (driven by ``ordergrad-rl reproduce``)."""
