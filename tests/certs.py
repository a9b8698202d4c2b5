"""Throwaway certificates made with the openssl command line: a CA, a server certificate
for 127.0.0.1/localhost, a client certificate, and a client certificate from another CA."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path
    rogue_key: Path


def _run(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d: Path, name: str) -> None:
    _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
         "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


def _leaf(d: Path, name: str, ca: str, ext: str) -> None:
    (d / f"{name}.ext").write_text(ext)
    _run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
         "-out", f"{name}.csr", cwd=d)
    _run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
         "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)


def make_certs(d: Path) -> Certs:
    d.mkdir(parents=True, exist_ok=True)
    _ca(d, "ca")
    _ca(d, "rogue-ca")
    _leaf(d, "server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _leaf(d, "client", "ca", "extendedKeyUsage=clientAuth\n")
    _leaf(d, "rogue", "rogue-ca", "extendedKeyUsage=clientAuth\n")
    return Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem", d / "client.key",
                 d / "rogue.pem", d / "rogue.key")
