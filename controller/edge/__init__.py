"""Edge-INC's control plane: distribution trees per round, clique and source, their multicast groups and
table entries (plan.py), installed and removed all or nothing over P4Runtime (install.py)."""
