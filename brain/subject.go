package brain

import (
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// subject.go names what a failure is about: the resource that failed, whatever tool reported it and however it was
// worded. One database refusing connections reads "connection to server at "db" (10.0.0.5), port 5432 failed" in
// psql, "dial tcp 10.0.0.5:5432: connect: connection refused" in Go and "Can't reach database server at `db`:`5432`"
// in Prisma; one missing package is "Can't resolve 'x'" in webpack and "Could not resolve "x"" in esbuild. Their
// texts share little, their subjects are the same. Two failures whose subjects are the same are the same failure;
// two whose subjects of one kind are different are different failures, however alike their words.

// subjectKind is one kind of thing that fails. Kinds are compared one by one.
type subjectKind string

const (
	subjHost   subjectKind = "host"   // a host the agent could not reach or resolve
	subjURL    subjectKind = "url"    // an HTTP endpoint that answered with an error status (host and path)
	subjStatus subjectKind = "status" // that error status
	subjModule subjectKind = "module" // a package, module or crate that could not be found or fetched
	subjFile   subjectKind = "file"   // a file that is missing
	subjTest   subjectKind = "test"   // a failing test
	subjRule   subjectKind = "rule"   // a linter rule that fired
	subjPlace  subjectKind = "place"  // the file a linter rule fired in
	subjSymbol subjectKind = "symbol" // a name the compiler cannot find
	subjSite   subjectKind = "site"   // where an exception or panic was thrown: its type and its deepest frame
	subjThrown subjectKind = "thrown" // what an exception says: its type and its message without the values it carries
	// Memory that ran out, however it was told: the kernel's OOM killer, exit status 137 (SIGKILL, which a container
	// or a cgroup's OOM kill gives), a runtime's out-of-memory error. Its one value is "memory".
	subjMemory subjectKind = "memory"
	// A package whose version constraints cannot all be met: the one a resolver says two others want in different
	// versions, whichever of them it names first and however it words it.
	subjConflict subjectKind = "conflict"
	// A system library that is missing, however a tool meets it: its header (a compiler's "gmp.h: No such file"),
	// its pkg-config package, its distribution's -dev package, the linker's -l flag, a configure script's or CMake's
	// search for it. Named without "lib", "-dev" or a version: "gmp" whether libgmp-dev, gmp.h or -lgmp.
	subjLib subjectKind = "lib"
	// A database's connections used up, however its server, driver or pool says so: Postgres's "too many clients
	// already" and its reserved slots, MySQL's "Too many connections" and max_user_connections, a pool that cannot
	// hand one out (HikariCP, SQLAlchemy's QueuePool, knex). Its one value is "database connections".
	subjConns subjectKind = "connections"
	// A device the machine cannot reach, however the flashing or debugging tool says so: "Failed to connect to ESP32:
	// No serial data received" (esptool), "Unable to connect to a debugger" (nrfjprog), "Cannot connect to target"
	// (J-Link). Its one value is "the device".
	subjDevice subjectKind = "device"
	// A database lock another session holds, however the migration tool or the server says so: LockNotAvailable, "lock
	// timeout", "could not obtain lock on relation", a statement "waiting for an AccessExclusiveLock". Its one value is
	// "a database lock".
	subjLock subjectKind = "lock"
)

// causeKinds name why something failed rather than where it showed: a server that cannot be reached, a module that
// cannot be found, a name the compiler cannot find, a place that throws. When two failures name the same cause, the
// tests it broke are its symptoms: three tests failing on one unreachable database, or on one exception thrown at
// one line, are one failure however many tests and tools tell it.
var causeKinds = []subjectKind{subjHost, subjModule, subjSymbol, subjSite, subjThrown, subjConflict, subjMemory, subjLib, subjConns, subjDevice, subjLock}

// aliasKinds are the kinds one resource can be named by more than once (a host by its name and its address, an
// endpoint by its host): one failure's names contained in the other's are the same resource. Other kinds must be
// equal: fewer failing tests or missing modules than last time is progress, not the same failure.
// A dependency conflict is named by its contended package, and by the packages that want it in different versions as
// each resolver chooses to tell them (Bundler's old message names one, its new one three).
// A missing library is named by each tool that meets it, and some tools name its neighbours too (an install hint
// listing several packages): one failure's libraries among the other's are the same cause.
var aliasKinds = map[subjectKind]bool{subjHost: true, subjURL: true, subjConflict: true, subjLib: true}

// subject is what one failure is about, by kind.
type subject map[subjectKind]map[string]bool

// foldedKinds are compared without case: host names, URLs and package registries ignore it.
var foldedKinds = map[subjectKind]bool{subjHost: true, subjURL: true, subjModule: true, subjStatus: true, subjConflict: true}

func (s subject) add(k subjectKind, v string) {
	v = strings.Trim(v, "`'\".,;:()[]{}<> ")
	if foldedKinds[k] {
		v = strings.ToLower(v)
	}
	if v == "" {
		return
	}
	if s[k] == nil {
		s[k] = map[string]bool{}
	}
	s[k][v] = true
}

var (
	// A failure to reach something over the network, in any tool's words: the text for which hosts are subjects.
	networkFailureRe = lazyRE(oneOf(`(?i)`,
		`connection refused`, `\bECONNREFUSED\b`, `\bECONNRESET\b`, `\bETIMEDOUT\b`, `\bEHOSTUNREACH\b`, `\bENOTFOUND\b`,
		`\b(?:can't|cannot|could not|couldn't|unable to|failed to) (?:connect|reach|resolve)\b`,
		`\bconnection (?:reset|timed out|to \S+ (?:failed|refused|timed out))\b`,
		`\b(?:can't|cannot|could not|couldn't|unable to|failed to) (?:obtain|open|establish) (?:a |the )?connection\b`, `\bno such host\b`, `\bname or service not known\b`,
		`\bname resolution\b`, `\bnot resolve host\b`, `\bmax retries exceeded\b`, `\bunreachable\b`,
		// pg_isready's "localhost:5432 - no response", a server "not responding".
		`\bno response\b`, `\bnot responding\b`,
		`\btim(?:ed|ing) ?out\b`, `\btimeout\b`, `\bi/o timeout\b`,
	))
	// An HTTP error status in a response: the text for which the endpoint is the subject.
	httpStatusRe = lazyRE(`(?i)(?:\b(?:HTTP(?:/[\d.]+)?|status(?: code)?|->|returned|answer(?:s|ed|ing)(?: with)?|respond(?:s|ed)?(?: with)?|server error|client error)\s*'?(?:[:=]\s*)?([45]\d\d)\b|\b([45]\d\d)\s+(?:bad gateway|service unavailable|gateway time-?out|internal server error|not found|too many requests)\b)`)
	urlRe        = lazyRE(`(?i)\bhttps?://([\w.-]+(?::\d+)?)(/[^\s'"<>()\x60]*)?`)
	hostPortRe   = lazyRE(`(?i)(?:^|[\s'"\x60(@=/])((?:\d{1,3}\.){3}\d{1,3}|\[[0-9a-f:]+\]|[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*)['"\x60]?:['"\x60]?(\d{2,5})\b`)
	// A host and its port in one clause, the port said apart: libpq's `server at "db" (10.0.0.5), port 5432`.
	hostThenPortRe = lazyRE(`(?i)\b(?:at|on|to|host)\s+['"\x60]?([a-z0-9][\w.-]*[a-z0-9])['"\x60]?(?:\s*\(((?:\d{1,3}\.){3}\d{1,3}|[0-9a-f]*:[0-9a-f:]+)\))?,?\s+port\s+(\d{2,5})\b`)
	// libpq's hint names the host and the port apart: `Is the server running on host "localhost" and accepting TCP/IP
	// connections on port 5432?`.
	hostAcceptingRe = lazyRE(`(?i)\bhost\s+['"\x60]?([a-z0-9][\w.-]*[a-z0-9])['"\x60]?(?:\s*\(([0-9a-f.:]+)\))?\s+and accepting [\w/]+ connections on port (\d{2,5})\b`)
	// A bare host name: a dotted name ending in a top-level or internal domain, or an IPv4 address.
	bareHostRe = lazyRE(`(?i)\b((?:\d{1,3}\.){3}\d{1,3}|(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:com|org|net|io|dev|app|co|ai|cloud|internal|local|lan|corp|example|test|svc|cluster|us|uk|de|eu))\b`)

	// A module, package or crate that could not be found or fetched, as each ecosystem names it.
	moduleSubjectRes = []*pattern{
		lazyRE(`(?i)\bno module named\s+['"]?([\w.\-]+)`),                                                                                  // Python
		lazyRE(`(?i)\blibrary stub for module named\s+['"]([\w.\-]+)['"]`),                                                                 // mypy
		lazyRE(`(?i)\bimport ['"]([\w.\-]+)['"] could not be resolved\b`),                                                                  // pyright, pylance
		lazyRE(`(?i)\bcannot load such file -- ([\w./\-]+)`),                                                                               // Ruby
		lazyRE(`(?i)\bpackage ([a-z][\w]*(?:\.[a-z][\w]*)+) does not exist\b`),                                                             // javac
		lazyRE(`(?i)\bcannot find module\s+['"]([^'"]+)['"]`),                                                                              // Node, tsc
		lazyRE(`(?i)\bcan't resolve\s+['"]([^'"]+)['"]`),                                                                                   // webpack
		lazyRE(`(?i)\b(?:could not|failed to) resolve(?: import)?\s+['"]([^'"]+)['"]`),                                                     // esbuild, vite
		lazyRE(`(?i)\bno required module provides package\s+([^\s;:]+)`),                                                                   // go
		lazyRE(`(?i)\bcannot find package\s+"?([^\s"]+)`),                                                                                  // go
		lazyRE(`(?m)^\s*go: ([\w.-]+\.[\w]+/[^\s@:]+)@`),                                                                                   // go get, go mod
		lazyRE(`(?i)missing go\.sum entry for module providing package\s+([^\s;(]+)`),                                                      // go
		lazyRE("(?i)\\bno matching package named `([^`]+)`"),                                                                               // cargo
		lazyRE("(?i)\\bfailed to select a version for the requirement `([\\w-]+)"),                                                         // cargo
		lazyRE("(?i)\\bcan't find crate for `([^`]+)`"),                                                                                    // rustc
		lazyRE(`(?i)\b(?:no matching distribution found|could not find a version that satisfies the requirement) (?:for )?([\w.\-\[\]]+)`), // pip
		lazyRE(`(?i)\b([\w.\-]+) \([^)]*\) which doesn't match any versions`),                                                              // poetry
		lazyRE(`(?i)'(@?[\w.\-]+(?:/[\w.\-]+)?)@[^']*' is not in (?:this|the npm) registry`),                                               // npm
		lazyRE(`(?i)(?:^|\s)(@?[\w.\-]+(?:/[\w.\-]+)?) is not in the npm registry`),                                                        // pnpm
		lazyRE(`(?i)\bno matching version found for (@?[\w.\-]+(?:/[\w.\-]+)?)@`),                                                          // npm, pnpm
		lazyRE(`(?i)\b(?:npm ERR! 404|E404|FETCH_404)\b.*?registry\.[\w.]+/(@?[\w.\-]+(?:%2f[\w.\-]+)?)`),                                  // npm, pnpm
		lazyRE(`(?i)\bcould not (?:resolve|find|transfer) (?:dependencies|artifact)\b[^\n]*?\bat ([\w.\-]+:[\w.\-]+):`),                    // maven
	}
	// Memory running out, in the words of the kernel, container engines and runtimes.
	memoryOutRe = lazyRE(oneOf(`(?i)`,
		`\bout of memory\b`, `\bout-of-memory\b`, `\bOOM[ -]?kill(?:ed|er)?\b`, `\bOOMKilled\b`,
		`\bexit(?:ed)?(?: with)? (?:code|status) 137\b`, `\(exit (?:code|status) 137\)`, `\bKilled process \d+\b`,
		`\bheap out of memory\b`, `\bMemoryError\b`, `\bcannot allocate memory\b`, `\bjava\.lang\.OutOfMemoryError\b`,
		`\bexceed(?:ed|ing) (?:the )?(?:physical |virtual )?memory limits?\b`,
	))
	dbLockRe            = lazyRE(`(?i)\bLockNotAvailable\b|\b(?:due to|on) lock timeout\b|\bcould not obtain lock on (?:relation|row|table)\b|\bwait(?:ed|ing) (?:\d+ \w+ )?(?:for|on) an? (?:AccessExclusive|Exclusive|RowExclusive|ShareRowExclusive|Share)Lock\b|\bLock wait timeout exceeded\b`)
	deviceUnreachableRe = lazyRE(`(?i)\b(?:unable to|cannot|can't|could not|couldn't|failed to) connect to (?:a |an |the )?(?:debugger|target|device|board|chip|probe|MCU|(?:ESP32|ESP8266|STM32|nRF\w*|RP2040|Espressif|Arduino|Pico)(?: device)?)\b`)
	connectionsOutRe    = lazyRE(oneOf(`(?i)`,
		`\btoo many (?:clients|connections)\b`, `\bremaining connection slots are reserved\b`,
		`\bmax_user_connections\b`, `\bER_CON_COUNT_ERROR\b`, `\bmaximum number of sessions exceeded\b`,
		`\bConnection is not available, request timed out\b`, `\bQueuePool limit of size \d+ overflow \d+ reached\b`,
		`\b(?:connection )?pool (?:is )?(?:exhausted|probably full)\b`, `\bTimeout acquiring a connection\b`,
	))
	// The contended package of a dependency conflict, as each resolver names it: pip, Poetry and uv say who "depends
	// on urllib3<1.27" and who "depends on urllib3>=2"; npm names the "peer react@"^17"" it cannot satisfy, or the
	// "Conflicting peer dependency: react@17.0.2"; cargo cannot "select a version for `openssl-sys`"; Bundler
	// "could not find compatible versions for gem "rack"". Read only in a resolver's failure (conflictGates).
	conflictSubjectRes = []*pattern{
		lazyRE(`(?i)\bdepends on ([a-z][\w.\-]*(?:\[[\w,]+\])?)\s*(?:\(|[<>=!~^]|\s+(?:version|v?\d))`),
		lazyRE(`(?i)\bpeer (?:dep(?:endency)? )?(@?[\w.\-]+(?:/[\w.\-]+)?)@["'^~<>=\d]`),
		lazyRE(`(?i)\bconflicting peer dependency:?\s+(@?[\w.\-]+(?:/[\w.\-]+)?)@`),
		lazyRE("(?i)\\bfailed to select a version for `([\\w-]+)`"),
		lazyRE(`(?i)\bcould not find compatible versions for (?:gem|package) "([^"]+)"`),
	}
	// A missing file, as runtimes and tools name it.
	fileSubjectRes = []*pattern{
		lazyRE(`(?i)\bno such file or directory(?:,\s*\w+)?:?\s+['"]([^'"]+)['"]`),
		lazyRE(`(?i)\b(?:open|stat|lstat|read)\s+([\w./-]+):\s+no such file or directory`),
		lazyRE(`(?i)['"]([\w./-]+\.\w+)['"]\s+(?:does not exist|not found)`),
	}
	// A test named as failing in prose or in a tool's one-line form: "TestX: …", "test_y fails", "TestZ failed".
	proseTestRe   = lazyRE(`(?m)(?:^|[\s(])((?:Test[A-Z_]\w*|test_\w+)(?:/[\w./-]+)?)(?::\s|\s+(?:fails|failed|failing|still fails|is failing|hangs|timed out)\b)`)
	runningTestRe = lazyRE(`(?m)^\s+(Test\w+(?:/\S+)?) \(\d[^)]*\)\s*$`)
	// A linter's rule: an eslint rule at the end of a finding, a code after a location (ruff, flake8), clippy's lint.
	lintRuleRes = []struct {
		re    *pattern
		gates []string // words without which it cannot match
	}{
		{lazyRE(`(?m)^\s*\d+:\d+\s+(?:error|warning|warn)\s+.*?\s((?:@?[\w-]+/)?[a-z][\w-]*)\s*$`), []string{" error ", " warning ", " warn "}},
		// Python linters (ruff, flake8, pylint) put a code after the location.
		{lazyRE(`(?m)^\s*\S+\.py:\d+:\d+:\s+([A-Z]{1,3}\d{2,4})\b`), []string{".py:"}},
		{lazyRE(`\bclippy::([a-z_-]+)`), []string{"clippy::"}},
		// An ESLint rule named anywhere in ESLint's failure, however the line around it is laid out: a plugin's
		// ("react-hooks/exhaustive-deps", "@typescript-eslint/no-floating-promises") or a core rule ("no-unused-vars").
		{lazyRE(`(?:^|[\s(\[])(@[\w-]+/[a-z][\w-]*|[a-z][\w-]*/[a-z]+(?:-[a-z]+)+|no-[a-z]+(?:-[a-z]+)*|prefer-[a-z]+(?:-[a-z]+)*|eqeqeq)(?:[\s:).,\]]|$)`), []string{"eslint"}},
		// go vet's analyzers name themselves after the location: "worker.go:88:3: printf: …".
		{lazyRE(`(?m)^\s*\S+\.go:\d+:\d+:\s+(` + strings.Join(vetAnalyzers, "|") + `):\s`), vetGates()},
	}
	// Where a linter's rule fired: the file heading eslint's findings, or the location on or after the finding.
	lintPlaceRes = []*pattern{
		lazyRE(`(?m)^\s*([\w./@-]+\.[A-Za-z]{1,5})\s*$`),
		lazyRE(`(?m)^\s*(?:-->\s*)?([\w./-]+\.[A-Za-z]{1,5}):\d+:\d+`),
	}
	// A name a module does not have, qualified by the module, as Python's import, its runtime and mypy each say it:
	// "cannot import name 'Mapping' from 'collections'", "module 'collections' has no attribute 'Mapping'", "Module
	// "collections" has no attribute "Mapping"". The groups are the name and the module, in the order each names them.
	qualifiedSymbolRes = []struct {
		re           *pattern
		name, module int
	}{
		{lazyRE(`\bcannot import name '([\w]+)' from '([\w.]+)'`), 1, 2},
		{lazyRE(`\b[Mm]odule ['"]([\w.]+)['"] has no attribute ['"](\w+)['"]`), 2, 1},
	}
	symbolSubjectRes = []*pattern{
		lazyRE(`\bundefined:\s+([\w.]+)`),
		lazyRE("\\bcannot find (?:value|function|type|struct|trait|macro) `([^`]+)`"),
		lazyRE(`\bCannot find name '([^']+)'`),
		lazyRE(`\bNameError: name '([^']+)' is not defined`),
		lazyRE(`\bsymbol:\s+\w+\s+(\w+)`),
	}
	// The frames of a stack trace, each runtime's own form, with the file and line of the frame: .NET ("at X.Y() in
	// /src/Y.cs:line 48"), the JVM ("at x.Y.z(Y.java:48)"), Node ("at z (/src/y.ts:48:10)"), Ruby ("/app/y.rb:48:in
	// 'z'") and a Go panic's goroutine ("\t/src/y.go:48 +0x1d") print the deepest frame first; Python ('File "y.py",
	// line 48, in z') prints it last.
	frameFirstRes = []*pattern{
		lazyRE(`\bat [^\s(]+\([^)\n]*\) in (?:[^\n:]*[/\\])?([^/\\\n:]+):line \d+`),
		lazyRE(`\bat [\w.$<>]+\(([\w$]+\.(?:java|kt|scala|groovy|clj)):\d+\)`),
		lazyRE(`\bat (?:[^\s(]+ )?\(?(?:[^\s():]*/)?([^\s/():]+\.(?:js|mjs|cjs|ts|tsx|jsx|mts|cts)):\d+:\d+\)?`),
		lazyRE(`(?m)^\s*(?:[^\s:]*/)?([^\s/:]+\.rb):\d+:in\b`),
		lazyRE(`(?m)^\s+(?:\S*/)?([^\s/]+\.go):\d+ \+0x`),
	}
	frameLastRe = lazyRE(`\bFile "(?:[^"\n]*/)?([^"/\n]+\.py)", line \d+`)
	// What was thrown: an exception or error class, or a Go panic, as its message starts ("KeyError: 'id'",
	// "System.NullReferenceException : Object reference…", "panic: runtime error"), not a name that only ends in Error.
	thrownRe = lazyRE(`\b((?:[A-Z]\w*\.)*[A-Z]\w*(?:Exception|Error)|panic) ?:`)

	// File extensions: a dotted name ending in one is a file, not a host.
	fileExts = map[string]bool{"go": true, "py": true, "rs": true, "ts": true, "tsx": true, "js": true, "jsx": true, "mjs": true,
		"cjs": true, "java": true, "kt": true, "rb": true, "json": true, "yaml": true, "yml": true, "toml": true, "csv": true,
		"md": true, "txt": true, "sql": true, "sh": true, "html": true, "css": true, "lock": true, "mod": true, "sum": true,
		"xml": true, "tf": true, "env": true, "cfg": true, "ini": true, "c": true, "h": true, "cpp": true, "swift": true, "zip": true}
)

var vetAnalyzers = []string{"printf", "copylocks", "composites", "unreachable", "shadow", "structtag", "unusedresult",
	"lostcancel", "nilfunc", "assign", "atomic", "bools", "loopclosure", "stdmethods", "unmarshal", "httpresponse",
	"errorsas", "ifaceassert", "stringintconv", "directive", "slog", "timeformat", "appends", "defers", "shift",
	"sigchanyzer", "unsafeptr"}

func vetGates() []string {
	g := make([]string, len(vetAnalyzers))
	for i, a := range vetAnalyzers {
		g[i] = ": " + a + ": "
	}
	return g
}

func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// localHosts name this machine: what identifies a local service is its port, so they count only with one.
var localHosts = map[string]bool{"localhost": true, "127.0.0.1": true, "0.0.0.0": true, "::1": true, "[::1]": true}

// subjectOf reads what one attempt's failure is about.
func subjectOf(failure string) subject {
	failure = historyPrefixRe.ReplaceAllString(failure, "")
	return subjectIn(failure, strings.ToLower(failure), nil)
}

// subjectGates are words without which a family of patterns cannot match: checking them first keeps reading the
// subject of a long log (hundreds of failing tests) cheap.
var subjectGates = map[subjectKind][]string{
	subjHost: {"refused", "econn", "etimedout", "ehostunreach", "enotfound", "connect", "reach", "resolv", "reset", "respon",
		"no such host", "name or service", "max retries", "unreachable", "timed out", "timing out", "timeout", "time out"},
	subjModule: {"module", "resolve", "package", "crate", "registry", "distribution", "requirement", "versions", "go: ", "dependenc", "artifact", "such file --"},
	subjFile:   {"no such file", "does not exist", "not found"},
	subjRule:   {"warn", "error", "clippy::", ".go:", "eslint"},
	subjSymbol: {"undefined", "cannot find", "nameerror", "symbol:", "cannot import name", "has no attribute"},
	subjTest:   {"test"},
	subjSite:   {"exception", "error", "panic"},
	subjMemory: {"memory", "oom", "137", "killed process"},
	subjConns:  {"connection", "clients", "pool", "sessions"},
	subjDevice: {"connect"},
	subjLock:   {"lock"},
	subjLib:    {".h: no such file", "pkg-config", "no package '", "-dev", "cannot find -l", "shared libraries", "could not find", ": not found"},
	// A resolver's own words for a conflict: without them "depends on" is prose ("the handler depends on the cache").
	subjConflict: {"conflict", "resolutionimpossible", "eresolve", "solverproblem", "no solution found", "failed to select a version",
		"compatible versions", "unable to resolve dependency", "could not resolve dependency", "version solving failed"},
}

// subjectScan is how much of a long failure's head and tail is read for its subject: a tool names what failed in
// its first lines or its summary at the end, and the middle of a long log repeats it.
const subjectScan = 4096

// headAndTail is s when short, else its first and last subjectScan bytes, each cut at a line.
func headAndTail(s string) string {
	if len(s) <= 2*subjectScan {
		return s
	}
	head, tail := s[:subjectScan], s[len(s)-subjectScan:]
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	return head + "\n" + tail
}

// statusGates are the words an HTTP error status comes with (httpStatusRe).
var statusGates = []string{"http", "status", "->", "returned", "answer", "respond", "server error", "client error", "gateway",
	"unavailable", "not found", "too many requests"}

func gated(lower string, k subjectKind) bool { return containsAny(lower, subjectGates[k]) }

// subjectIn reads the subject of failure (lower is it lower-cased); tests, when not nil, are its failing tests as
// its signature already read them.
func subjectIn(failure, lower string, tests map[string]bool) subject {
	failure, lower = headAndTail(failure), headAndTail(lower)
	s := subject{}
	network := gated(lower, subjHost) && networkFailureRe.MatchString(failure)
	var status []string
	if network || containsAny(lower, statusGates) {
		status = httpStatusRe.FindStringSubmatch(failure)
	}
	// Hosts count in a failure to reach them, and endpoints in a failure they answered with an error status;
	// a URL in any other text (a docs link under a lint finding) is not what failed.
	if network || status != nil {
		if status != nil {
			s.add(subjStatus, status[1]+status[2])
		}
		for _, m := range urlRe.FindAllStringSubmatch(failure, -1) {
			// A local server is one per port, but its pages are many: a page that fails is named by its path
			// (a browser test stuck on /login is not one stuck on /settings; sameServer matches either with the
			// server named alone).
			if h, _, _ := strings.Cut(strings.ToLower(m[1]), ":"); localHosts[h] && strings.Trim(m[2], "/") != "" {
				path, _, _ := strings.Cut(m[2], "?")
				s.add(subjHost, hostOnly(m[1])+strings.TrimRight(path, "/"))
			} else {
				addHost(s, m[1])
			}
			if status != nil {
				s.add(subjURL, strings.TrimRight(hostOnly(m[1])+m[2], "/"))
			}
		}
		for _, m := range hostPortRe.FindAllStringSubmatchIndex(failure, -1) {
			// Hosts in http URLs were read with their URL (a JDBC or Redis URL is read here).
			if before := strings.ToLower(failure[max(0, m[2]-8):m[2]]); strings.HasSuffix(before, "http://") || strings.HasSuffix(before, "https://") {
				continue
			}
			addHost(s, failure[m[2]:m[3]]+":"+failure[m[4]:m[5]])
		}
		// Both name the host, its address in parentheses when given, and the port (groups 1, 2, 3).
		for _, re := range []*pattern{hostAcceptingRe, hostThenPortRe} {
			for _, m := range re.FindAllStringSubmatch(failure, -1) {
				addHost(s, m[1]+":"+m[3])
				if m[2] != "" {
					addHost(s, bracketed(m[2])+":"+m[3])
				}
			}
		}
		for _, m := range bareHostRe.FindAllStringSubmatchIndex(failure, -1) {
			// A dotted name inside a path ("github.com/acme/x", "/srv/app.internal/x") is a package or a file, and
			// one inside a longer dotted name ("java.io.IOException", "java.net.ConnectException") is a package.
			if m[2] > 0 && strings.ContainsRune("/.", rune(failure[m[2]-1])) || m[3] < len(failure) && failure[m[3]] == '/' ||
				m[3]+1 < len(failure) && failure[m[3]] == '.' && isLetter(failure[m[3]+1]) {
				continue
			}
			addHost(s, failure[m[2]:m[3]])
		}
	}
	if gated(lower, subjModule) {
		for _, re := range moduleSubjectRes {
			for _, m := range re.FindAllStringSubmatch(failure, -1) {
				s.add(subjModule, moduleName(m[1]))
			}
		}
	}
	if gated(lower, subjFile) {
		for _, re := range fileSubjectRes {
			for _, m := range re.FindAllStringSubmatch(failure, -1) {
				s.add(subjFile, shortPath(m[1]))
			}
		}
	}
	if gated(lower, subjTest) {
		if tests == nil {
			tests = map[string]bool{}
			for _, re := range failingTestRes {
				for _, m := range re.FindAllStringSubmatch(failure, -1) {
					tests[normalizeFailure(m[1])] = true
				}
			}
		}
		for t := range tests {
			s.add(subjTest, t)
		}
		// Go lists the tests a timeout caught running, each with its time: "running tests:\n\tTestX (2m0s)".
		if strings.Contains(lower, "running tests") {
			for _, m := range runningTestRe.FindAllStringSubmatch(failure, -1) {
				s.add(subjTest, m[1])
			}
		}
		// Tests named in prose count when no tool's line names the failing tests.
		if len(tests) == 0 {
			for _, m := range proseTestRe.FindAllStringSubmatch(failure, -1) {
				s.add(subjTest, m[1])
			}
		}
	}
	if gated(lower, subjRule) {
		for _, r := range lintRuleRes {
			if !containsAny(lower, r.gates) {
				continue
			}
			for _, m := range r.re.FindAllStringSubmatch(failure, -1) {
				s.add(subjRule, m[1])
			}
		}
		if len(s[subjRule]) > 0 {
			for _, re := range lintPlaceRes {
				for _, m := range re.FindAllStringSubmatch(failure, -1) {
					s.add(subjPlace, shortPath(m[1]))
				}
			}
		}
	}
	if gated(lower, subjSymbol) {
		for _, re := range symbolSubjectRes {
			for _, m := range re.FindAllStringSubmatch(failure, -1) {
				s.add(subjSymbol, m[1])
			}
		}
		for _, q := range qualifiedSymbolRes {
			for _, m := range q.re.FindAllStringSubmatch(failure, -1) {
				s.add(subjSymbol, m[q.module]+"."+m[q.name])
			}
		}
	}
	if gated(lower, subjMemory) && memoryOutRe.MatchString(failure) {
		s.add(subjMemory, "memory")
	}
	if gated(lower, subjDevice) && deviceUnreachableRe.MatchString(failure) {
		s.add(subjDevice, "the device")
	}
	if gated(lower, subjLock) && dbLockRe.MatchString(failure) {
		s.add(subjLock, "a database lock")
	}
	if gated(lower, subjConns) && connectionsOutRe.MatchString(failure) {
		s.add(subjConns, "database connections")
	}
	if gated(lower, subjConflict) {
		for _, re := range conflictSubjectRes {
			for _, m := range re.FindAllStringSubmatch(failure, -1) {
				s.add(subjConflict, moduleName(m[1]))
			}
		}
	}
	if gated(lower, subjLib) {
		for _, re := range libSubjectRes {
			for _, m := range re.FindAllStringSubmatch(failure, -1) {
				if n := libName(m[1]); n != "" {
					s.add(subjLib, n)
				}
			}
		}
	}
	if gated(lower, subjSite) {
		if site := siteOf(failure); site != "" {
			s.add(subjSite, site)
		}
		if thrown := thrownOf(failure); thrown != "" {
			s.add(subjThrown, thrown)
		}
	}
	return s
}

// thrownName is the class of what failure throws, without its package ("TypeError", "NullReferenceException",
// "panic"), and where its name ends; "" for none, and for an assertion's or an expectation's, which is a test
// failing rather than the code under test throwing.
func thrownName(failure string) (name string, end int) {
	loc := thrownRe.FindStringSubmatchIndex(failure)
	if loc == nil {
		return "", 0
	}
	thrown := failure[loc[2]:loc[3]]
	name = thrown[strings.LastIndexByte(thrown, '.')+1:]
	if strings.Contains(name, "Assert") || strings.Contains(name, "Expectation") {
		return "", 0
	}
	return name, loc[1]
}

// siteOf is where failure's exception or panic was thrown in the code under test: what was thrown and the file of
// the deepest frame that is neither the runtime's, a framework's or a library's ("NullReferenceException in
// PricingService.cs"); "" without such a frame. The file is named alone (runtimes print it under different roots)
// and without its line, which moves as the agent edits the file around the same fault. A failure thrown by a test
// itself (an assertion, a frame in a test file) has no site: that is the test failing, and different tests failing
// are different failures.
func siteOf(failure string) string {
	name, _ := thrownName(failure)
	if name == "" {
		return ""
	}
	file, at := "", len(failure)
	for _, re := range frameFirstRes {
		for _, m := range re.FindAllStringSubmatchIndex(failure, -1) {
			if m[0] < at && !foreignFrame(failure[m[0]:m[1]]) {
				file, at = failure[m[2]:m[3]], m[0]
				break
			}
		}
	}
	if file == "" {
		for _, m := range frameLastRe.FindAllStringSubmatchIndex(failure, -1) {
			if !foreignFrame(failure[m[0]:m[1]]) {
				file = failure[m[2]:m[3]] // Python prints the deepest frame last
			}
		}
	}
	if file == "" || testFileRe.MatchString(file) {
		return ""
	}
	return name + " in " + file
}

var (
	// The end of an exception's message head: a sentence's end, a parenthesis, an elision, a clause break.
	messageEndRe = lazyRE(`\.\s|\.$|[(\n;—]|\.\.\.|…| - `)
	// The values a message carries, which change from attempt to attempt: quoted strings and numbers.
	messageValueRe = lazyRE("'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`|\\b\\d[\\w.]*")
	messageWordRe  = lazyRE(`[A-Za-z]{2,}`)
)

// thrownOf names what failure's exception says, by its type and its message's head with the values taken out
// ("TypeError: descriptors cannot be created directly"): what a runtime says of one fault, with a trace or without,
// whichever values it carries this time. A message of fewer than three words (a bare "KeyError: 'id'") names too
// little to tell one fault from another, and an assertion's is the test's own: "".
func thrownOf(failure string) string {
	name, end := thrownName(failure)
	if name == "" {
		return ""
	}
	rest := strings.TrimLeft(failure[end:], " :")
	if i := messageEndRe.FindStringIndex(rest); i != nil {
		rest = rest[:i[0]]
	}
	rest = messageValueRe.ReplaceAllString(rest, "_")
	if len(messageWordRe.FindAllStringIndex(rest, 4)) < 3 {
		return ""
	}
	return name + ": " + strings.ToLower(strings.Join(strings.Fields(rest), " "))
}

var (
	// foreignFrames mark a frame of the runtime, a test framework or a library, where many faults of the code under
	// test surface alike: Go's runtime and testing package, the JDK and JUnit, .NET's System and Microsoft
	// namespaces and its test frameworks, node's internals and node_modules, Python's standard library and installed
	// packages, Ruby's gems.
	foreignFrames = []string{"/go/src/", "/usr/local/go/", "/usr/lib/go", "testing.go", "runtime/", "org.junit.",
		"org.opentest4j.", "junit.framework.", "java.", "javax.", "jdk.", "sun.", "kotlin.", "scala.", "at System.",
		"at Microsoft.", "Xunit.", "NUnit.", "node_modules", "node:internal", "/lib/python", "site-packages",
		"dist-packages", "<frozen", "/gems/", "/ruby/"}
	// testFileRe is a test's own file, by each ecosystem's naming.
	testFileRe = lazyRE(`(?i)(?:_test\.go|^test_[\w]*\.py|_tests?\.py|^tests?\.py|^conftest\.py|(?:Tests?|IT|Spec)\.(?:java|kt|scala|groovy|cs)|\.(?:test|spec)\.[cm]?[jt]sx?|_(?:spec|test)\.rb)$`)
)

func foreignFrame(frame string) bool {
	for _, f := range foreignFrames {
		if strings.Contains(frame, f) {
			return true
		}
	}
	return false
}

// addHost adds a host (with or without its port) and, for a remote host named with a port, the host alone: the
// same server is named with and without its port by different tools. Local hosts count only with their port.
// bracketed puts an IPv6 address in brackets, as it is written before a port; other hosts stay as they are.
func bracketed(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

func addHost(s subject, hostport string) {
	hostport = strings.ToLower(strings.Trim(hostport, "`'\""))
	var host, port string
	var hasPort bool
	if v6, rest, ok := strings.Cut(strings.TrimPrefix(hostport, "["), "]"); ok && strings.HasPrefix(hostport, "[") {
		// An IPv6 literal with its port ("[::1]:6379"): only a local one counts, as the others are rarely named.
		host, port, hasPort = v6, strings.TrimPrefix(rest, ":"), strings.HasPrefix(rest, ":")
	} else {
		host, port, hasPort = strings.Cut(strings.Trim(hostport, "[]"), ":")
	}
	if localHosts[host] {
		if hasPort {
			s.add(subjHost, "localhost:"+port)
		}
		return
	}
	if i := strings.LastIndexByte(host, '.'); i >= 0 && fileExts[host[i+1:]] || !strings.Contains(host, ".") {
		return
	}
	s.add(subjHost, host)
	if hasPort {
		s.add(subjHost, hostport)
	}
}

func hostOnly(hostport string) string {
	h, _, _ := strings.Cut(strings.ToLower(hostport), ":")
	if localHosts[h] {
		return strings.ToLower(hostport)
	}
	return h
}

// libSubjectRes find a missing system library, as each tool meets it (group 1: its name in that tool's form).
var libSubjectRes = []*pattern{
	lazyRE(`\bfatal error: ([\w+.-]+)(?:/[\w+./-]+)?\.h: No such file or directory`),               // C and C++ compilers
	lazyRE(`\bPackage '?([\w+.-]+?)'? was not found in the pkg-config search path`),                // pkg-config
	lazyRE(`\bNo package '([\w+.-]+)' found`),                                                      // pkg-config
	lazyRE(`\b(lib[\w+.]+?)-(?:dev|devel)\b`),                                                      // apt, dnf, opam's depexts
	lazyRE(`\bcannot find -l([\w+.-]+)`),                                                           // ld
	lazyRE(`\berror while loading shared libraries: (lib[\w+-]+?)\.so`),                            // the dynamic loader
	lazyRE(`\bCould NOT find ([\w+.-]+)`),                                                          // CMake
	lazyRE(`(?i)\b(?:link(?:ing)?|links?) (?:with|against) ([\w+.-]+)\b[^\n]{0,20}?\bnot found\b`), // configure scripts
}

// libName is a system library's name as libSubjectRes's tools give it, without "lib", a version or a case.
func libName(s string) string {
	s = strings.ToLower(s)
	s = strings.TrimPrefix(s, "lib")
	s = strings.TrimRight(s, "0123456789.-+")
	if len(s) < 2 {
		return ""
	}
	return s
}

// moduleName is a package's name without the version or range that tools append, URL-decoded ("@acme%2fx").
func moduleName(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		s = u
	}
	s = strings.Trim(s, "`'\"")
	for _, sep := range []string{"==", ">=", "<=", "~=", "@^", "@~", "@v", "@>", "@<", "@latest", " "} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i]
		}
	}
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		s = s[:i]
	}
	return s
}

// shortPath is a path's last two components: tools print one file relative to different directories.
func shortPath(p string) string {
	p = strings.TrimPrefix(p, "./")
	parts := strings.Split(p, "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/")
}

// subjectVerdict is what comparing two subjects says.
type subjectVerdict int

const (
	subjectUnknown   subjectVerdict = iota // nothing to compare, or names that partly overlap
	subjectSame                            // the same thing failed
	subjectDifferent                       // something else failed
)

// compareSubjects judges two failures by what failed. a and b are the failures' subjects, textA and textB their texts
// (for a subject one failure names that the other only describes in words). A kind both name decides: different
// names are different failures; the same names (or, for hosts and endpoints, one's names among the other's) are
// the same. A failing test is the exception: two failures of one test may fail it differently (a KeyError, then a
// TypeError), so the same test does not make them the same failure, only different tests make them different.
// When only one failure names anything, it is the same when the other's words mention it: a failure told in prose
// says neither how nor where, only what.
func compareSubjects(a, b subject, textA, textB string) subjectVerdict {
	if sameCause(a, b) {
		return subjectSame
	}
	shared, same := 0, 0
	for k, va := range a {
		vb := b[k]
		if len(vb) == 0 {
			continue
		}
		match := sameName
		if k == subjHost {
			match = sameServer
		}
		if disjoint(va, vb, match) {
			return subjectDifferent
		}
		if k == subjTest {
			continue
		}
		shared++
		if equalSets(va, vb) || aliasKinds[k] && (subset(va, vb, match) || subset(vb, va, match)) {
			same++
		}
	}
	switch {
	case shared > 0 && same == shared:
		return subjectSame
	case shared > 0:
		return subjectUnknown
	case len(a) > 0 && len(b) == 0 && mentionsAll(textB, a):
		return subjectSame
	case len(b) > 0 && len(a) == 0 && mentionsAll(textA, b):
		return subjectSame
	}
	return subjectUnknown
}

// sameCause reports failures that name a cause of the same kinds (causeKinds) and the same one in each: whatever tests
// it broke, they are one failure.
func sameCause(a, b subject) bool {
	shared := 0
	for _, k := range causeKinds {
		va, vb := a[k], b[k]
		if len(va) == 0 || len(vb) == 0 {
			continue
		}
		match := sameName
		if k == subjHost {
			match = sameServer
		}
		if !equalSets(va, vb) && !(aliasKinds[k] && (subset(va, vb, match) || subset(vb, va, match))) {
			return false
		}
		shared++
	}
	return shared > 0
}

// mentionsAll reports text that names, in its own words, every failing test of s and names nothing else s has: "CSV
// export test" mentions test_export_csv. An agent tells a test's failure in prose that way; a compiler or a package
// manager names what it cannot find verbatim, and another error that mentions the same name ("too many arguments in
// call to X" after "undefined: X") is another failure. A test name of one word is too common to count as mentioned.
func mentionsAll(text string, s subject) bool {
	if len(s[subjTest]) == 0 || len(s) > 1 {
		return false
	}
	words := map[string]bool{}
	for _, w := range nameParts(text) {
		words[w] = true
	}
	for v := range s[subjTest] {
		parts := nameParts(v)
		if len(parts) < 2 {
			return false
		}
		for _, p := range parts {
			if !words[p] {
				return false
			}
		}
	}
	return true
}

// nameParts splits a name or a text into lower-case words of three letters or more, breaking identifiers at
// underscores, dots, slashes and case changes, without "test" and plural s: the words a name is made of.
func nameParts(s string) []string {
	var out []string
	var w []rune
	flush := func() {
		if len(w) >= 3 {
			p := strings.ToLower(string(w))
			p = strings.TrimSuffix(p, "s")
			if p != "test" && len(p) >= 3 {
				out = append(out, p)
			}
		}
		w = w[:0]
	}
	var prev rune
	for _, r := range s {
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			w = append(w, r)
		case unicode.IsLetter(r):
			w = append(w, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// names is a subject's names for a reason, most telling kinds first.
func (s subject) names() string {
	var out []string
	for _, k := range []subjectKind{subjModule, subjLib, subjConflict, subjURL, subjHost, subjTest, subjFile, subjSymbol, subjRule, subjMemory, subjConns, subjDevice, subjLock} {
		vs := make([]string, 0, len(s[k]))
		for v := range s[k] {
			vs = append(vs, v)
		}
		slices.Sort(vs)
		if k == subjHost && len(vs) > 1 {
			// The longest names (host:port) say most.
			slices.SortFunc(vs, func(x, y string) int { return len(y) - len(x) })
			vs = vs[:1]
		}
		for _, v := range vs {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		if len(out) >= 2 {
			break
		}
	}
	if len(out) > 2 {
		out = out[:2]
	}
	return strings.Join(out, ", ")
}

func sameName(x, y string) bool { return x == y }

// sameServer: a local server named alone ("localhost:3000") is the server of each of its pages
// ("localhost:3000/login"); two pages are two things.
func sameServer(x, y string) bool {
	return x == y || strings.HasPrefix(y, x+"/") || strings.HasPrefix(x, y+"/")
}

// has reports a name in b that is x.
func has(b map[string]bool, x string, match func(x, y string) bool) bool {
	if b[x] {
		return true
	}
	for y := range b {
		if match(x, y) {
			return true
		}
	}
	return false
}

func disjoint(a, b map[string]bool, match func(x, y string) bool) bool {
	for k := range a {
		if has(b, k, match) {
			return false
		}
	}
	return true
}

func subset(a, b map[string]bool, match func(x, y string) bool) bool {
	for k := range a {
		if !has(b, k, match) {
			return false
		}
	}
	return true
}

func equalSets(a, b map[string]bool) bool { return len(a) == len(b) && subset(a, b, sameName) }
