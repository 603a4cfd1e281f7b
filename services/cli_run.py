"""``trajforge up``, ``serve`` and ``worker``: run the services and the queue worker."""

from __future__ import annotations

import asyncio
import sys

import typer

from shared.settings import get_settings

__all__ = ["register"]


def _check_migrated_or_exit() -> None:
    from shared.db.migrate import ensure_migrated
    from shared.db.session import create_engine_for
    from shared.errors import DatabaseNotMigrated

    async def check() -> None:
        engine = create_engine_for(get_settings())
        try:
            await ensure_migrated(engine)
        finally:
            await engine.dispose()

    try:
        asyncio.run(check())
    except DatabaseNotMigrated as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def up(host: str = "127.0.0.1", port: int = 8000,
       split: bool = typer.Option(False, "--split", help="Every service its own process on loopback."),
       base_port: int = typer.Option(8000, help="With --split: first port (gateway; the rest follow)."),
       ready_timeout_s: float = typer.Option(120.0, "--ready-timeout",
                                             help="With --split: seconds every service has to answer /healthz.")
       ) -> None:
    """Run every service in one process (embedded default: SQLite, in-process work), or split."""
    if split:
        _up_split(host, base_port, ready_timeout_s)
        return
    from services.app import create_all_in_one_app
    from shared.bootstrap import prepare_embedded
    from shared.web.server import serve_app

    settings = get_settings()
    _, path, created = prepare_embedded(settings)
    _check_migrated_or_exit()
    typer.echo(f"API key {'created and ' if created else ''}stored in {path} (send it as `Authorization: Bearer`)",
               err=True)
    typer.echo(f"database: {settings.effective_database_url.split('@')[-1]}  queue: "
               f"{'celery/redis' if settings.redis_url else 'in-process'}", err=True)
    serve_app(create_all_in_one_app(settings), host=host, port=port)


def _up_split(host: str, base_port: int, ready_timeout_s: float = 120.0) -> None:
    """The compose stack without containers: one process per service, wired by the URL table."""
    import signal
    import time

    from shared.bootstrap import prepare_embedded
    from shared.topology import SplitStack

    settings = get_settings()
    _, path, _ = prepare_embedded(settings)
    _check_migrated_or_exit()
    extra = {"TRAJFORGE_SERVICE_KEY": settings.service_key or asyncio.run(_service_key())}
    stack = SplitStack(host=host, base_port=base_port, extra_env=extra, worker=bool(settings.redis_url))
    signal.signal(signal.SIGTERM, _interrupt)
    stack.start(ready_timeout_s=ready_timeout_s)
    for name, url in stack.table.items():
        typer.echo(f"{name:10s} {url}", err=True)
    typer.echo(f"worker: {'celery' if settings.redis_url else 'none (work runs in each service process)'}; "
               f"API key in {path}", err=True)
    try:
        while not stack.dead():
            time.sleep(0.5)
        typer.echo(f"error: {', '.join(stack.dead())} exited; stopping the stack", err=True)
        raise typer.Exit(1)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()


def _interrupt(*_: object) -> None:
    """SIGTERM stops the split stack the way Ctrl-C does."""
    raise KeyboardInterrupt


async def _service_key() -> str:
    """A key for the split stack's own service-to-service upstream calls."""
    from shared.auth import create_key
    from shared.db.session import create_engine_for, make_sessionmaker

    settings = get_settings()
    engine = create_engine_for(settings)
    try:
        async with make_sessionmaker(engine)() as session:
            _, key = await create_key(session, "split-services", salt=settings.key_salt)
            await session.commit()
            return key
    finally:
        await engine.dispose()


def serve(service: str, host: str = "127.0.0.1", port: int = 8000,
          workers: int = typer.Option(1, min=1, help="Processes serving on the one port (one core each; the "
                                                     "gateway's proxy calls are CPU-bound).")) -> None:
    """Run one service on its own (the database must be migrated)."""
    from services.app import create_service_app, service_spec
    from shared.web.server import serve_workers

    try:
        service_spec(service)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    _check_migrated_or_exit()
    code = serve_workers(lambda: create_service_app(service), host=host, port=port, workers=workers)
    if code:
        raise typer.Exit(code)


def worker(
    concurrency: int = typer.Option(2, help="Worker processes (or threads)."),
    pool: str = typer.Option("prefork", help="Celery pool: prefork, solo or threads."),
    include: list[str] = typer.Option([], help="Extra task modules to load."),
    queues: str = typer.Option("", help="Comma-separated queues to consume (default: TRAJFORGE_QUEUE_NAME)."),
) -> None:
    """Run a Celery worker for every service's tasks (needs TRAJFORGE_REDIS_URL)."""
    from services.app import all_task_modules
    from shared.queue.app import configure_celery, load_task_modules

    settings = get_settings()
    if not settings.redis_url:
        typer.echo("error: TRAJFORGE_REDIS_URL is not set; the embedded default runs work in-process", err=True)
        raise typer.Exit(2)
    _check_migrated_or_exit()
    modules = [*all_task_modules(), *include]
    app = configure_celery(settings, task_modules=modules)
    load_task_modules(modules)
    app.worker_main(["worker", f"--concurrency={concurrency}", f"--pool={pool}",
                     f"--queues={queues or settings.queue_name}",
                     "--loglevel=INFO", "--without-gossip", "--without-mingle"])
    sys.exit(0)


def register(app: typer.Typer) -> None:
    """Add up/serve/worker to the CLI."""
    app.command()(up)
    app.command()(serve)
    app.command()(worker)
