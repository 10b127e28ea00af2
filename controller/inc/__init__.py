"""In-network aggregation jobs: reduction trees, slot and multicast-group allocation, and their
installation on the switches over P4Runtime."""
