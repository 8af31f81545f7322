# duckrouter — the two commands that matter: `make run` and `make test`.

SWIFT    ?= swift
## Each pass of make test is stopped after this many seconds (a hung test fails the run instead
## of holding CI to its limit; a pass takes 5-6 minutes on a 2-core VM).
TEST_TIMEOUT ?= 1500
SESSION  ?= Sessions/default.json
# zita-njbridge: the router runs its zita-j2n for routes remote over it (docs/NETWORK.md).
# qrencode: `duckctl page --qr` draws the control page's link with it, for a phone.
DEBIAN_PACKAGES := jackd2 libjack-jackd2-dev liblo-dev liblo-tools pipewire pipewire-jack libavahi-client-dev zita-njbridge libebur128-dev qrencode
BENCH_PACKAGES  := jack-mixer valgrind gnuplot-nox chromium chromium-driver
# The control page's tests drive a real browser; the zeroconf test runs its own avahi daemon
# (on a private D-Bus, in a network namespace of its own) and browses with avahi-browse.
TEST_PACKAGES   := chromium chromium-driver avahi-daemon avahi-utils dbus iproute2 zsh fish man-db
# The Debian package: dpkg-shlibdeps finds its dependencies; deb-test installs it into a Debian 12
# root made by debootstrap.
DEB_PACKAGES    := dpkg-dev debootstrap patchelf

## Where `make install` puts things (DESTDIR for staging, as usual). A home install:
## make install PREFIX=$$HOME/.local USERUNITDIR=$$HOME/.config/systemd/user
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/duckrouter
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR  ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
# Given to scripts/dist.sh only where it installs (not exported: make deb sets its own, /usr).
INSTALL_DIRS = PREFIX='$(PREFIX)' BINDIR='$(BINDIR)' DATADIR='$(DATADIR)' MANDIR='$(MANDIR)' DOCDIR='$(DOCDIR)' \
	USERUNITDIR='$(USERUNITDIR)' BASHCOMPDIR='$(BASHCOMPDIR)' ZSHCOMPDIR='$(ZSHCOMPDIR)' FISHCOMPDIR='$(FISHCOMPDIR)' \
	DESTDIR='$(DESTDIR)' SWIFT='$(SWIFT)'
# The one version (Sources/BuildInfo/Version.swift): the binaries' --version and the package's.
VERSION := $(shell scripts/dist.sh version)

.PHONY: all deps build release run test test-pipewire tsan bench fuzz soak hostile chaos chaos-cases clean dist install uninstall deb deb-test print-version

all: build

deps:
	@scripts/install-deps.sh $(DEBIAN_PACKAGES)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## Run the router on $(SESSION), starting `jackd -d dummy` when no JACK server is running.
run: release
	@scripts/run.sh .build/release/duckrouter $(SESSION) $(ARGS)

## Every test: unit tests, and integration tests against private jackd servers; then the
## integration suites (all but the soak) again on a private headless PipeWire (scripts/test-pipewire.sh).
test: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)
	@scripts/install-python-deps.sh
	$(SWIFT) build --build-tests
	$(SWIFT) build --product generate-manual
	scripts/with-timeout.sh $(TEST_TIMEOUT) "make test's jackd pass" $(SWIFT) test --skip-build --no-parallel
	scripts/with-timeout.sh $(TEST_TIMEOUT) "make test's PipeWire pass" scripts/test-pipewire.sh

## Suites on PipeWire's JACK: make test-pipewire FILTER=DaemonTests (default: every integration suite but the soak).
test-pipewire: deps
	$(SWIFT) build --build-tests
	scripts/test-pipewire.sh $(if $(FILTER),--filter '$(FILTER)')

## The unit and integration suites under ThreadSanitizer: any report fails (scripts/tsan.sh).
tsan: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)
	@scripts/install-python-deps.sh
	scripts/tsan.sh

## Benchmarks; figures go into docs/PERFORMANCE.md.
bench: deps
	@scripts/install-deps.sh $(BENCH_PACKAGES)
	@scripts/install-python-deps.sh
	$(SWIFT) build -c release --product duckbench
	$(SWIFT) build -c release --product duckrouter
	$(SWIFT) build -c release --product oscbench
	scripts/bench.sh

## A long run under 1,000 OSC messages a second plus app churn, SOAK_SECONDS (600) long.
SOAK_SECONDS ?= 600
soak: deps
	$(SWIFT) build -c release --product duckrouter
	$(SWIFT) build -c release --product ducksoak
	.build/release/ducksoak --duckrouter .build/release/duckrouter --seconds $(SOAK_SECONDS) $(SOAK_ARGS)

## Music through the router while a refused host (127.0.0.2) and an allowed one (127.0.0.3) send
## garbage over UDP, OSC TCP, HTTP and WebSocket, hold connections and read nothing, for
## HOSTILE_SECONDS (120) after 20 s quiet; an allowed surface on 127.0.0.1 is measured throughout
## (docs/RELIABILITY.md, "Hostile traffic").
HOSTILE_SECONDS ?= 120
hostile: deps
	$(SWIFT) build -c release --product duckrouter
	$(SWIFT) build -c release --product duckhostile
	.build/release/duckhostile --duckrouter .build/release/duckrouter --seconds $(HOSTILE_SECONDS) $(HOSTILE_ARGS)

## A seeded schedule of faults around the router (servers killed, frozen and restarted, devices
## unplugged, reloads, SIGKILLs, garbage, a read-only state folder...), checked after each step
## against a model of what should be heard and kept (docs/RELIABILITY.md, "The chaos run"):
## MINUTES (5), SEED (default: from the clock, printed; a failed run prints the one to replay),
## SERVER (jackd or pipewire); the report goes to CHAOS_REPORT with a plot beside it.
MINUTES ?= 5
SERVER ?= jackd
CHAOS_REPORT ?= .build/chaos-report.txt
chaos: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build -c release --product duckrouter
	$(SWIFT) build -c release --product duckchaos
	scripts/chaos.sh $(SERVER) .build/release/duckchaos --duckrouter .build/release/duckrouter --minutes $(MINUTES) \
		$(if $(SEED),--seed $(SEED)) --report $(CHAOS_REPORT) $(CHAOS_ARGS)

## Every schedule that found a defect, played again on both servers (Sources/ChaosRig/ChaosCases.swift).
chaos-cases: deps
	@scripts/install-deps.sh $(TEST_PACKAGES)
	$(SWIFT) build -c release --product duckrouter
	$(SWIFT) build -c release --product duckchaos
	scripts/chaos.sh jackd .build/release/duckchaos --duckrouter .build/release/duckrouter --cases
	scripts/chaos.sh pipewire .build/release/duckchaos --duckrouter .build/release/duckrouter --cases

## Fuzz the OSC decoder, the session-file loader, OSCQuery commands and the HTTP port's wire (request heads,
## WebSocket frames) with libFuzzer, FUZZ_SECONDS (300) each.
fuzz: deps
	scripts/fuzz.sh

## An installed program (issue 20): release binaries with the Swift runtime linked in (they run
## where no Swift is installed), man pages and shell completions, in .build-dist.
dist: deps
	SWIFT='$(SWIFT)' scripts/dist.sh build

## Copies what dist built under $(DESTDIR)$(PREFIX) (building it first if nothing is built):
## `make dist && sudo make install`.
install:
	$(INSTALL_DIRS) scripts/dist.sh install

uninstall:
	$(INSTALL_DIRS) scripts/dist.sh uninstall

## duckrouter_$(VERSION)_<arch>.deb in .build-dist.
deb: dist
	@scripts/install-deps.sh $(DEB_PACKAGES)
	scripts/make-deb.sh

## Installs the .deb into a clean Debian 12 root (debootstrap; needs root, and the network),
## runs it there with no Swift anywhere, and removes it, checking nothing is left:
## `make deb && sudo make deb-test` (as root, `make deb-test` makes the package first).
deb-test:
	@if [ "$$(id -u)" -eq 0 ] && [ -z "$${SUDO_USER:-}" ]; then $(MAKE) --no-print-directory deb; fi
	scripts/deb-test.sh

print-version:
	@echo $(VERSION)

clean:
	rm -rf .build .build-fuzz .build-tsan .build-dist
