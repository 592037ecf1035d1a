"""An nginx of the benchmarks' own: its configuration, every path under one directory."""

import os


def write_conf(d, body):
    """Write d/nginx.conf for one worker whose files are all under @d, with @body in http."""
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "nginx.conf")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"daemon off; worker_processes 1; pid {d}/nginx.pid;\n"
                f"error_log {d}/error.log warn;\n"
                "events { worker_connections 4096; }\n"
                f"http {{ access_log off; client_body_temp_path {d}; "
                f"proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; "
                f"scgi_temp_path {d};\n{body}\n}}\n")
    return path
