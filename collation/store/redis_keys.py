"""Every Redis key the project writes besides RQ's own."""

from __future__ import annotations


class RedisKeys:
    """Every Redis key the project writes besides RQ's own, under one prefix (RQ's ``rq:`` style).

    Redis holds only queues and transient job state; losing all of it loses no collation.
    """

    prefix = "collation:"

    @classmethod
    def job_id(cls, cid: str, step_name: str) -> str:
        """The RQ job id of a collation's step: stable, so a step is never enqueued twice at once."""
        return f"{cid}-{step_name}"

    @classmethod
    def client(cls, client: str) -> str:
        """Hash of a client's (a token's, or an address's) unfinished collations: id -> regions listed."""
        return f"{cls.prefix}client:{client}"

    @classmethod
    def light(cls, cid: str) -> str:
        """Set while a collation was its client's only one when admitted: its jobs go to the queues' front."""
        return f"{cls.prefix}light:{cid}"

    @classmethod
    def jobs(cls, cid: str) -> str:
        """Set of the ids of every job enqueued for a collation (to cancel them)."""
        return f"{cls.prefix}jobs:{cid}"

    @classmethod
    def advance_lock(cls, cid: str) -> str:
        """Lock held while the scheduler decides a collation's next steps."""
        return f"{cls.prefix}advance:{cid}"

    @classmethod
    def store_problem(cls) -> str:
        """Why the data store cannot be written, while it cannot (``store.writable``)."""
        return f"{cls.prefix}store-problem"

    @classmethod
    def request_lock(cls, cid: str) -> str:
        """Lock held by the API's POST and DELETE of a collation, so that the two never interleave."""
        return f"{cls.prefix}request:{cid}"

    @classmethod
    def store_identity(cls) -> str:
        """The identity of the API's data store (``store.sharing``): every worker's must equal it."""
        return f"{cls.prefix}store-identity"

    @classmethod
    def worker_stores(cls) -> str:
        """Hash of worker name -> identity of that worker's data store."""
        return f"{cls.prefix}worker-stores"

    @classmethod
    def stuck(cls, cid: str) -> str:
        """Why a collation cannot progress (a worker that does not see the API's store said so)."""
        return f"{cls.prefix}stuck:{cid}"

    @classmethod
    def suspect(cls, job_id: str) -> str:
        """When a job that claims to be live was first seen stuck."""
        return f"{cls.prefix}suspect:{job_id}"

    @classmethod
    def access_tokens(cls, cid: str) -> str:
        """The collation's IIIF Auth 2 access tokens, encrypted (``jobs.access``), while it is prepared."""
        return f"{cls.prefix}access:{cid}"
