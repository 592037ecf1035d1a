#!/bin/sh
# make demo: python3 connects before its server exists and gets its data once the server is up.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
echo "demo: python3 connects to 127.0.0.1:$port now; its server starts in 1.5 s"
echo "demo: \$ scripts/backoff -v -- python3 -c 'socket.create_connection((\"127.0.0.1\", $port)) ...'"
"$root/scripts/backoff" -v -- python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("demo: client received: " + s.recv(100).decode().strip())
' "$port" &
client=$!
# The server's lateness is the point of the demo, not a synchronisation.
sleep 1.5
python3 -c '
import socket, sys
srv = socket.create_server(("127.0.0.1", int(sys.argv[1])))
print("demo: server listening")
conn, _ = srv.accept()
conn.sendall(b"hello from the late server\n")
conn.close()
' "$port"
wait "$client"
echo "demo: the unmodified client retried with backoff and connected"
