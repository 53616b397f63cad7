#!/usr/bin/env bash
# Starts the real servers of the integration tests (integration_test.go) on
# loopback: nginx with TLS 1.3 only, HTTP/2 and a client certificate
# requirement, tinyproxy as an explicit forward proxy, and redis-server for
# the response cache's Redis store (no persistence; the tests that can run
# their own redis-server do, and use this one where the binary is absent).
# All come from Debian's packages, installed here if missing; the
# certificates are made with openssl in a fresh directory.
#
#   eval "$(bash .ci/services.sh)"            # start; prints export lines
#   go test -run TestIntegration .
#   bash .ci/services.sh stop "$FUSION_TEST_SERVICES_DIR"
#
# Only the export lines go to stdout; progress and errors go to stderr.
# FUSION_NGINX_PORT, FUSION_TINYPROXY_PORT and FUSION_REDIS_PORT choose the
# ports (default: free ones above 20000).
set -euo pipefail

log() { echo "services.sh: $*" >&2; }

# stop DIR: ends the servers started with DIR, by their pid files.
if [ "${1:-}" = stop ]; then
  dir=${2:?usage: services.sh stop DIR}
  for pidfile in "$dir/nginx.pid" "$dir/tinyproxy.pid" "$dir/redis.pid"; do
    if [ -s "$pidfile" ]; then
      kill "$(cat "$pidfile")" 2>/dev/null || true
    fi
  done
  exit 0
fi

# install_packages installs what is missing, without starting the packages'
# own services (policy-rc.d), retrying once after refreshing the lists.
install_packages() {
  local need=()
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
  command -v tinyproxy >/dev/null 2>&1 || [ -x /usr/bin/tinyproxy ] || need+=(tinyproxy)
  command -v openssl >/dev/null 2>&1 || need+=(openssl)
  command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || need+=(redis-server)
  [ ${#need[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ]; then
    log "missing ${need[*]}: run as root, or apt-get install them (nginx-light or nginx, tinyproxy, openssl, redis-server)"
    exit 1
  fi
  local pkgs=() p
  for p in "${need[@]}"; do
    if [ "$p" = nginx ]; then
      # nginx-light (Debian 12) has TLS and HTTP/2 and nothing else; Debian 13 has only nginx.
      if apt-cache show nginx-light >/dev/null 2>&1; then p=nginx-light; fi
    fi
    pkgs+=("$p")
  done
  local made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  log "installing ${pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y --no-install-recommends "${pkgs[@]}" >&2; then
    apt-get update >&2
    pkgs=("${pkgs[@]/#nginx-light/nginx}")
    apt-get install -y --no-install-recommends "${pkgs[@]}" >&2
  fi
  if [ -n "$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Ports below the kernel's ephemeral range (ip_local_port_range, 32768 and
# up by default): a port there can be taken between this check and nginx's
# bind by any outgoing connection of the tests that run beside it, which
# once failed CI with "Address already in use".
ephemeral_low=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
free_port() {
  local p span=$(( ${ephemeral_low:-32768} - 20000 ))
  [ "$span" -gt 1000 ] || span=12000
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % span))
    if ! port_in_use "$p"; then echo "$p"; return 0; fi
  done
  log "no free port found"
  exit 1
}

# wait_port PORT NAME LOG: waits up to 10 s for a listener on PORT.
wait_port() {
  for _ in $(seq 1 100); do
    if port_in_use "$1"; then return 0; fi
    sleep 0.1
  done
  log "$2 is not listening on 127.0.0.1:$1; its log:"
  cat "$3" >&2 || true
  exit 1
}

install_packages
PATH="$PATH:/usr/sbin:/sbin"

dir=$(mktemp -d "${TMPDIR:-/tmp}/fusion-services.XXXXXX")
chmod 755 "$dir" # nginx's workers and tinyproxy drop to an unprivileged user
cd "$dir"

# Certificates: a CA, a server certificate for 127.0.0.1 and localhost, and
# a client certificate with CN gateway, ECDSA P-256, valid for two days.
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca-key.pem
openssl req -x509 -new -key ca-key.pem -sha256 -days 2 -subj "/CN=fusion test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out ca.pem 2>/dev/null
issue() { # NAME CN EXTENSIONS
  key "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -set_serial "0x$(openssl rand -hex 16)" \
    -days 2 -sha256 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
issue server 127.0.0.1 "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth
keyUsage=critical,digitalSignature"
issue client gateway "extendedKeyUsage=clientAuth
keyUsage=critical,digitalSignature"
chmod 644 ./*.pem # read by the test process, which need not be root

nginx_port=${FUSION_NGINX_PORT:-$(free_port)}
tinyproxy_port=${FUSION_TINYPROXY_PORT:-$(free_port)}

# nginx 1.25.1 replaced "listen ... http2" with the http2 directive.
nginx_version=$(nginx -v 2>&1 | sed -n 's|.*nginx/\([0-9.]*\).*|\1|p')
if printf '%s\n%s\n' 1.25.1 "$nginx_version" | sort -V -C; then
  listen="listen 127.0.0.1:$nginx_port ssl;
    http2 on;"
else
  listen="listen 127.0.0.1:$nginx_port ssl http2;"
fi
mkdir -p nginx-tmp
cat >nginx.conf <<EOF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/nginx-error.log warn;
events { worker_connections 64; }
http {
  access_log $dir/nginx-access.log;
  client_body_temp_path $dir/nginx-tmp/body;
  proxy_temp_path $dir/nginx-tmp/proxy;
  fastcgi_temp_path $dir/nginx-tmp/fastcgi;
  uwsgi_temp_path $dir/nginx-tmp/uwsgi;
  scgi_temp_path $dir/nginx-tmp/scgi;
  server {
    $listen
    ssl_certificate $dir/server.pem;
    ssl_certificate_key $dir/server-key.pem;
    ssl_protocols TLSv1.3;
    ssl_client_certificate $dir/ca.pem;
    ssl_verify_client on;
    location = /graphql {
      default_type application/json;
      return 200 '{"data":{"ok":true},"extensions":{"protocol":"\$server_protocol","tls":"\$ssl_protocol","client":"\$ssl_client_s_dn"}}';
    }
  }
}
EOF
nginx -t -c "$dir/nginx.conf" >&2 2>"$dir/nginx-test.log" || { cat "$dir/nginx-test.log" >&2; exit 1; }
nginx -c "$dir/nginx.conf" >&2
wait_port "$nginx_port" nginx "$dir/nginx-error.log"

user_lines=
if [ "$(id -u)" = 0 ]; then
  user_lines="User nobody
Group nogroup"
  touch tinyproxy.log tinyproxy.pid
  chown nobody:nogroup tinyproxy.log tinyproxy.pid
fi
cat >tinyproxy.conf <<EOF
$user_lines
Port $tinyproxy_port
Listen 127.0.0.1
Timeout 30
MaxClients 16
Allow 127.0.0.1
ViaProxyName "tinyproxy"
PidFile "$dir/tinyproxy.pid"
LogFile "$dir/tinyproxy.log"
LogLevel Info
EOF
tinyproxy -c "$dir/tinyproxy.conf" >&2
wait_port "$tinyproxy_port" tinyproxy "$dir/tinyproxy.log"

# Redis: loopback only, nothing written to disk, daemonized with its pid
# file here (stop ends it).
redis_port=${FUSION_REDIS_PORT:-$(free_port)}
cat >redis.conf <<EOF
bind 127.0.0.1
port $redis_port
protected-mode yes
save ""
appendonly no
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
EOF
redis-server "$dir/redis.conf" >&2
wait_port "$redis_port" redis-server "$dir/redis.log"

log "nginx on 127.0.0.1:$nginx_port, tinyproxy on 127.0.0.1:$tinyproxy_port, redis on 127.0.0.1:$redis_port, files in $dir"
printf 'export FUSION_TEST_SERVICES_DIR=%q\n' "$dir"
printf 'export FUSION_TEST_NGINX_URL=%q\n' "https://127.0.0.1:$nginx_port/graphql"
printf 'export FUSION_TEST_NGINX_CA=%q\n' "$dir/ca.pem"
printf 'export FUSION_TEST_NGINX_CLIENT_CERT=%q\n' "$dir/client.pem"
printf 'export FUSION_TEST_NGINX_CLIENT_KEY=%q\n' "$dir/client-key.pem"
printf 'export FUSION_TEST_TINYPROXY_URL=%q\n' "http://127.0.0.1:$tinyproxy_port"
printf 'export FUSION_TEST_REDIS_URL=%q\n' "redis://127.0.0.1:$redis_port/0"
