"""The controller as a service: tenants, jobs and their reduction trees behind a REST API.

The core (store, planner, entity sets, switch pool, job manager) knows nothing of HTTP, so it can be
driven and tested directly; `app` is a thin FastAPI layer over it and `__main__` serves it with uvicorn.
"""
