package workspace

import "strings"

// execKeys are the configuration keys that make git run a program, or pull in a file or a transport that could: from
// git's documentation of git-config(1) ("Variables", git 2.39 through 2.47) and of the commands that read them
// (githooks(5), gitattributes(5) "filter", "diff", "merge", gitcredentials(7), gitremote-helpers(7), git-upload-pack(1),
// git-fetch-pack(1)). A "*" is a subsection (a driver's, a tool's, a remote's, a URL's name).
//
// orch's own git reads none of them from anything the agent could have written: in a run it reads only the
// configuration it wrote (git.go), and on the repository it overrides on the command line the ones a command of
// orch's could reach (safety, offline). The list is also what the repository's print watches for changes
// (gitdir.go), and what the tests plant in every configuration git could read, to show none of them runs.
var execKeys = []string{
	// Programs run at the moment the key is read.
	"core.fsmonitor", "core.hookspath", "core.editor", "core.pager", "core.sshcommand", "core.gitproxy", "core.askpass",
	"core.alternaterefscommand", "sequence.editor", "pager.*",
	// Drivers named by gitattributes(5), which the worktree's .gitattributes selects.
	"filter.*.clean", "filter.*.smudge", "filter.*.process", "diff.*.command", "diff.*.textconv", "merge.*.driver",
	"diff.external",
	// Tools a command may start.
	"diff.tool", "difftool.*.cmd", "difftool.*.path", "merge.tool", "mergetool.*.cmd", "mergetool.*.path",
	"web.browser", "browser.*.cmd", "browser.*.path", "man.viewer", "man.*.cmd", "man.*.path", "guitool.*.cmd",
	"tar.*.command", "trailer.*.command", "trailer.*.cmd", "imap.tunnel", "sendemail.smtpserver", "sendemail.tocmd",
	"sendemail.cccmd", "instaweb.httpd", "alias.*", "hook.*.command", "submodule.*.update",
	// Credentials and signing.
	"credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "gpg.ssh.defaultkeycommand",
	"commit.gpgsign", "tag.gpgsign", "push.gpgsign", "log.showsignature",
	// Transports: a program on the other side of a local or ssh remote, a remote helper, an ext:: command.
	"uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack", "remote.*.vcs", "url.*.insteadof",
	"url.*.pushinsteadof", "protocol.allow", "protocol.*.allow",
	// Another file's settings.
	"include.path", "includeif.*.path",
}

// ExecKey reports whether the configuration key name ("section.key" or "section.subsection.key", as git-config
// prints it) makes git run a program or read settings that could (execKeys).
func ExecKey(name string) bool {
	sec, rest, ok := strings.Cut(name, ".")
	if !ok {
		return false
	}
	sub, key := "", rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		sub, key = rest[:i], rest[i+1:]
	}
	sec, key = strings.ToLower(sec), strings.ToLower(key)
	for _, k := range execKeys {
		ps, prest, _ := strings.Cut(k, ".")
		psub, pkey := "", prest
		if i := strings.LastIndexByte(prest, '.'); i >= 0 {
			psub, pkey = prest[:i], prest[i+1:]
		}
		if ps != sec {
			continue
		}
		switch {
		case pkey == "*" && sub == "": // pager.<cmd>, alias.<name>
			return true
		case psub == "*" && sub != "" && pkey == key:
			return true
		case psub == "" && sub == "" && pkey == key:
			return true
		}
	}
	return false
}
