"""THE REGISTRY: what each op computes, its derivative, what it saves, its Node name."""
