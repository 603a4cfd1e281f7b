"""Uploaded workspaces: stored by content, unpacked safely, dependencies built once per requirements.

Layout under ``settings.functions_path``::

    packages/<id>.zip  .json  .log     the upload, its build record, its build log
    workspaces/<id>/                   the unpacked workspace (``functions/`` + ``requirements.txt``)
    deps/<requirements hash>/          ``pip install --target`` of those requirements, shared by
                                       every package with the same requirements

The package id is ``pkg-`` + the zip's sha256 (first 24 hex digits): the same bytes
upload to the same package, whose build is reused. A build installs the
requirements (skipped when the hash is cached), then imports every module of
``functions/`` in a child process with the package's ``PYTHONPATH`` and lists
the processor classes it finds; any failure is a ``failed`` build whose
``error`` says the cause and whose log holds pip's output or the traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import stat
import sys
import time
import uuid
import zipfile
from pathlib import Path, PurePosixPath

from services.functions.errors import PackageInvalid, PackageNotFound
from shared.clients.functions import FunctionPackage
from shared.settings import Settings

__all__ = ["PackageStore", "package_pythonpath", "repo_root", "requirements_hash"]

log = logging.getLogger(__name__)

_DONE_MARK = ".trajforge-complete"
_MAX_FILES = 20_000
_LOG_TAIL = 4000


def repo_root() -> Path:
    """The directory holding ``shared`` and ``services`` (on a worker's path, so the SDK imports)."""
    import shared

    return Path(shared.__file__).resolve().parent.parent


def requirements_hash(text: str) -> str:
    """Hash of the meaningful requirement lines (comments, blanks, order ignored) and this interpreter."""
    lines = sorted({line.split("#", 1)[0].strip() for line in text.splitlines()} - {""})
    tag = f"{sys.implementation.name}-{sys.version_info.major}.{sys.version_info.minor}"
    return hashlib.sha256("\n".join([tag, *lines]).encode()).hexdigest()[:24]


def _check_requirements(text: str) -> None:
    """Only requirement specifiers: pip options and direct URLs would choose another index or code."""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line and (line.startswith("-") or "://" in line or line.startswith((".", "/"))):
            raise PackageInvalid(f"requirements.txt line {number} ({line!r}): only package requirements are "
                                 "allowed (no pip options, URLs or paths)", param="requirements.txt")


def _members(zf: zipfile.ZipFile, *, max_bytes: int) -> tuple[list[zipfile.ZipInfo], str]:
    """The zip's file entries and the prefix to strip (one wrapping folder); refuses unsafe entries."""
    infos = zf.infolist()
    if len(infos) > _MAX_FILES:
        raise PackageInvalid(f"the zip holds {len(infos)} entries; at most {_MAX_FILES} are allowed")
    total = 0
    for info in infos:
        path = PurePosixPath(info.filename)
        if "\\" in info.filename or path.is_absolute() or ".." in path.parts or info.filename.startswith("/"):
            raise PackageInvalid(f"unsafe path in the zip: {info.filename!r} (absolute or leaving the workspace)")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise PackageInvalid(f"the zip holds a symbolic link ({info.filename!r}); links are not allowed")
        total += info.file_size
    if total > max_bytes:
        raise PackageInvalid(f"the zip unpacks to {total} bytes; at most {max_bytes} are allowed")
    files = [i for i in infos if not i.is_dir()]
    names = {PurePosixPath(i.filename).parts[0] for i in files}
    prefix = ""
    if "functions" not in names and len(names) == 1:  # a zipped workspace folder: look inside it
        prefix = names.pop() + "/"
    if not any(i.filename == f"{prefix}functions/__init__.py" for i in files):
        raise PackageInvalid("the zip has no functions/__init__.py: a workspace is a functions/ package "
                             "plus requirements.txt")
    return files, prefix


def _unpack(data: bytes, dest: Path, *, max_bytes: int) -> str:
    """Unpack the workspace into ``dest`` (atomically); returns requirements.txt's text."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise PackageInvalid(f"the upload is not a zip file: {exc}") from exc
    with zf:
        files, prefix = _members(zf, max_bytes=max_bytes)
        tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:8]}")
        try:
            for info in files:
                rel = info.filename[len(prefix):]
                if not rel:
                    continue
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
            requirements = tmp / "requirements.txt"
            text = requirements.read_text(encoding="utf-8") if requirements.exists() else ""
            _check_requirements(text)
            if dest.exists():
                shutil.rmtree(tmp)
            else:
                tmp.rename(dest)
        except (zipfile.BadZipFile, OSError, UnicodeDecodeError, ValueError) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise PackageInvalid(f"the zip cannot be unpacked: {type(exc).__name__}: {exc}") from exc
        except PackageInvalid:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return text


def package_pythonpath(workspace: Path, deps: Path) -> str:
    """The workers' ``PYTHONPATH``: the workspace first, then its dependencies, then trajforge's SDK."""
    return os.pathsep.join([str(workspace), str(deps), str(repo_root())])


class PackageStore:
    """Packages on disk and their builds (one build task per package, one pip run per requirements hash)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.functions_path
        for sub in ("packages", "workspaces", "deps", "scratch"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self._builds: dict[str, asyncio.Task[None]] = {}
        self._deps_locks: dict[str, asyncio.Lock] = {}

    def workspace(self, package_id: str) -> Path:
        """The unpacked workspace of a package."""
        return self.root / "workspaces" / package_id

    def deps_dir(self, req_hash: str) -> Path:
        """The installed dependencies of one requirements hash."""
        return self.root / "deps" / req_hash

    def _record_path(self, package_id: str) -> Path:
        return self.root / "packages" / f"{package_id}.json"

    def log_path(self, package_id: str) -> Path:
        """The build log of a package."""
        return self.root / "packages" / f"{package_id}.log"

    async def upload(self, data: bytes) -> FunctionPackage:
        """Store the zip (once per content) and start its build; a known package is returned as it is."""
        if len(data) > self.settings.functions_max_package_bytes:
            raise PackageInvalid(f"the upload is {len(data)} bytes; at most "
                                 f"{self.settings.functions_max_package_bytes} are allowed")
        sha = hashlib.sha256(data).hexdigest()
        package_id = f"pkg-{sha[:24]}"
        if self._record_path(package_id).exists():
            return await self.get(package_id)
        text = await asyncio.to_thread(_unpack, data, self.workspace(package_id),
                                       max_bytes=self.settings.functions_max_unpacked_bytes)
        await asyncio.to_thread((self.root / "packages" / f"{package_id}.zip").write_bytes, data)
        package = FunctionPackage(package_id=package_id, sha256=sha, size_bytes=len(data),
                                  requirements_hash=requirements_hash(text), status="building",
                                  created_at=time.time())
        self._save(package)
        self._start_build(package)
        return package

    async def get(self, package_id: str) -> FunctionPackage:
        """The package's record; a build interrupted by a restart is started again."""
        path = self._record_path(package_id)
        if not path.exists():
            raise PackageNotFound(f"no function package {package_id!r}; upload it with POST /v1/functions")
        package = FunctionPackage.model_validate_json(path.read_text())
        if package.status == "building" and package_id not in self._builds:
            self._start_build(package)
        return package

    def read_log(self, package_id: str) -> str:
        """The build log (empty while the build has written nothing)."""
        if not self._record_path(package_id).exists():
            raise PackageNotFound(f"no function package {package_id!r}")
        path = self.log_path(package_id)
        return path.read_text(errors="replace") if path.exists() else ""

    def _save(self, package: FunctionPackage) -> None:
        path = self._record_path(package.package_id)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(package.model_dump_json())
        tmp.replace(path)

    def _start_build(self, package: FunctionPackage) -> None:
        task = asyncio.create_task(self._build(package), name=f"functions.build:{package.package_id}")
        self._builds[package.package_id] = task
        task.add_done_callback(lambda _t: self._builds.pop(package.package_id, None))

    async def wait(self, package_id: str) -> FunctionPackage:
        """The package once its build in this process has ended."""
        task = self._builds.get(package_id)
        if task is not None:
            await asyncio.shield(task)
        return await self.get(package_id)

    async def _build(self, package: FunctionPackage) -> None:
        logfile = self.log_path(package.package_id)
        try:
            with open(logfile, "ab") as out:
                deps = await self._install(package, out)
                classpaths = await self._inspect(package, deps, out)
            package = package.model_copy(update={"status": "ready", "classpaths": classpaths, "error": None,
                                                  "built_at": time.time()})
        except _BuildFailed as exc:
            package = package.model_copy(update={"status": "failed", "error": str(exc), "built_at": time.time()})
        except Exception as exc:  # noqa: BLE001 - a build must end in a recorded state, whatever broke
            log.exception("build of %s failed", package.package_id)
            package = package.model_copy(update={"status": "failed", "built_at": time.time(),
                                                  "error": f"internal build error: {type(exc).__name__}: {exc}"})
        self._save(package)

    async def _install(self, package: FunctionPackage, out: io.BufferedWriter) -> Path:
        req_hash = package.requirements_hash
        deps = self.deps_dir(req_hash)
        async with self._deps_locks.setdefault(req_hash, asyncio.Lock()):
            if (deps / _DONE_MARK).exists():
                out.write(f"dependencies {req_hash}: cached\n".encode())
                return deps
            requirements = self.workspace(package.package_id) / "requirements.txt"
            tmp = deps.with_name(f".{req_hash}.{uuid.uuid4().hex[:8]}")
            tmp.mkdir(parents=True)
            lines = requirements.read_text().split("\n") if requirements.exists() else []
            if any(line.split("#", 1)[0].strip() for line in lines):
                out.write(f"dependencies {req_hash}: pip install --target\n".encode())
                out.flush()
                cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                       "--no-warn-script-location", "--target", str(tmp), "-r", str(requirements)]
                code = await self._run(cmd, out, env=None)
                if code != 0:
                    shutil.rmtree(tmp, ignore_errors=True)
                    raise _BuildFailed(f"pip install failed (exit {code}): {self._log_tail(package)}")
            else:
                out.write(f"dependencies {req_hash}: none\n".encode())
            (tmp / _DONE_MARK).write_text(str(time.time()))
            if deps.exists():  # another process finished the same hash first
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.rename(deps)
            return deps

    async def _inspect(self, package: FunctionPackage, deps: Path, out: io.BufferedWriter) -> list[str]:
        """Import every module of ``functions/`` in a child process; the processor classes found."""
        result = self.root / "packages" / f"{package.package_id}.inspect.json"
        out.write(b"import check: functions/\n")
        out.flush()
        env = {"PYTHONPATH": package_pythonpath(self.workspace(package.package_id), deps),
               "PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(self.root / "scratch")}
        cmd = [sys.executable, "-m", "services.functions.inspect", str(result)]
        code = await self._run(cmd, out, env=env, cwd=self.workspace(package.package_id))
        try:
            found = json.loads(result.read_text())
        except (OSError, ValueError):
            raise _BuildFailed(f"the import check crashed (exit {code}): {self._log_tail(package)}") from None
        finally:
            with contextlib.suppress(OSError):
                result.unlink()
        if found.get("errors"):
            first = found["errors"][0]
            raise _BuildFailed(f"import of {first['module']} failed: {first['error']}")
        classpaths = [str(c) for c in found.get("classpaths") or []]
        out.write(f"processors: {', '.join(classpaths) or 'none'}\n".encode())
        return classpaths

    async def _run(self, cmd: list[str], out: io.BufferedWriter, *, env: dict[str, str] | None,
                   cwd: Path | None = None) -> int:
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=out, stderr=asyncio.subprocess.STDOUT, env=env,
                                                    cwd=cwd, stdin=asyncio.subprocess.DEVNULL)
        try:
            return await asyncio.wait_for(proc.wait(), self.settings.functions_build_timeout_s)
        except TimeoutError:
            raise _BuildFailed(f"{cmd[2]} did not finish within {self.settings.functions_build_timeout_s} s") from None
        finally:
            if proc.returncode is None:  # timed out, or the service is stopping
                proc.kill()
                await asyncio.shield(proc.wait())

    def _log_tail(self, package: FunctionPackage) -> str:
        text = self.read_log(package.package_id).strip()
        return text[-_LOG_TAIL:].splitlines()[-1] if text else "no output"

    async def close(self) -> None:
        """Cancel running builds (a restarted service starts them again)."""
        for task in list(self._builds.values()):
            task.cancel()
        for task in list(self._builds.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class _BuildFailed(Exception):
    """A build step failed; the message is the package's ``error``."""
