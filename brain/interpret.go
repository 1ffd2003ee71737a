package brain

import (
	"context"
	"strings"
	"unicode/utf8"
)

// interpret.go reads an agent's final output the way the interpret prompt tells an LLM to: evidence of
// completion (summaries of changes, passing tests, commits), of failure (unresolved errors, failing tests,
// the agent saying it could not), and of a question for the human. A question wins over completion, because
// asking is cheaper than building on a wrong guess; a courtesy offer at the end of finished work ("let me
// know if you'd like…") is not a question.

// unclearQuestion is asked when the output shows neither completion, failure nor a question.
const unclearQuestion = "The agent's result is unclear. Please review the output and advise."

var (
	// Completion evidence that settles it: tests or builds passing, commits, "Done".
	strongCompletionRes = []*pattern{
		lazyRE(`(?i)\ball\s+(?:the\s+)?(?:\d+\s+)?(?:of the\s+)?(?:\w+\s+)?(?:tests?|specs?|checks?)\s+(?:now\s+)?(?:pass|passed|passing|succeed(?:ed)?|are green|green|ok)\b`),
		lazyRE(`(?i)\b(?:tests?|specs?|suite|build|lint(?:er)?|vet|checks?|ci|make \w+|go test|go build|npm test|npm run \w+|pytest|cargo (?:test|build|check|clippy)|tsc|mypy|ruff|eslint)\b(?:[^.\n]|\.\S|\.\.\.){0,60}?\b(?:pass|passes|passed|passing|succeeds|succeeded|is clean|are clean|clean|is green|are green|green|ok)\b`),
		lazyRE(`(?i)\b\d+\s+(?:tests?\s+)?passed\b`),
		lazyRE(`(?i)\b0\s+(?:failed|failing|failures?|errors?)\b|\b(?:no|zero)\s+(?:failures|failing tests|test failures|regressions)\b`),
		lazyRE(`(?m)^ok\s+\S+|^PASS\s*$|^OK(?: \(.*\))?\s*$|test result: ok\.|^[\s│┃]*SUCCESS(?::[^\n│]*)?[\s│┃]*$`),
		lazyRE(`(?im)^\s*(?:#+\s*)?[*_]{0,2}(?:done|all done|completed|finished|task complete[d]?)\b[*_]{0,2}\s*[.!:—-]`),
		lazyRE(`(?i)\b(?:task|work|implementation|feature|change|changes|fix|migration|refactor(?:ing)?)\s+(?:is\s+|are\s+|has been\s+|have been\s+)?(?:now\s+)?(?:complete|completed|done|finished|in place)\b`),
		// A run of the job itself that ended well: "Training run finished and the model is exported", "the backfill
		// completed"; not one that "finished with errors".
		lazyRE(`(?i)\b(?:run|training|job|pipeline|backfill|reindex|export|import|sync|deploy(?:ment)?|rollout|upgrade|migration)\s+(?:has\s+)?(?:(?:finished|completed|complete|succeeded)(?:\s+(?:successfully|cleanly|and)\b|[.,;:!]|\s*$)|(?:completed?|succeeded) in \d)`),
		lazyRE(`(?i)\b(?:starts|started|runs|ran|works|worked|boots|booted|deploys|deployed|loads|loaded)\s+(?:up\s+)?(?:cleanly|fine|correctly|as expected|without (?:errors?|issues|problems|warnings))\b`),
		lazyRE(`(?i)\bsuccessfully\b|\bsummary of (?:the )?changes\b|\bchanges made\b|\bbuild succeeded\b|\bBUILD SUCCESSFUL\b|\bcompiled successfully\b|✅`),
		// The agent's word that the thing builds: "the closure builds", "both targets now compile cleanly".
		lazyRE(`(?i)\b(?:it|everything|the (?:\w+ ){0,2}?(?:closure|project|image|binary|crate|package|module|app|system|configuration|config|build|targets?)|both (?:\w+ )?(?:hosts|targets|images|packages|configurations?))\s+(?:now\s+)?(?:builds?|compiles?)(?:\s+(?:cleanly|fine|again|without (?:errors?|warnings)))?(?:[.,;]|\s+and\b|\s*$)`),
		// A deploy or release that is there: "Deployed to production at https://…", "published to npm".
		lazyRE(`(?i)^(?:[*_]{0,2})?(?:deployed|released|published|shipped) (?:it |them )?(?:to|on) (?:production|prod|staging|npm|pypi|crates\.io|the registry)\b`),
		// A run the agent says went through with no error: "ran all 38 cells with no errors".
		lazyRE(`(?i)\b(?:ran|run|runs|finished|completed|built|compiled|executed)\b[^.\n]{0,60}?\bwith (?:no|zero) errors\b`),
		// A package a registry says it published, and the agent's word that it is there: npm's "+ @acme/tokens@2.3.0",
		// cargo's "Published acme-cli v1.4.0 at registry `crates-io`", "tidewatch 0.3.1 is on crates.io".
		lazyRE(`(?i)^\s*\+ (?:@[\w.-]+/)?[\w.-]+@\d[\w.+-]*\s*$|^\s*Published \S+ v?\d[\w.+-]* at registry\b|\b(?:is|are) (?:now )?(?:on|live on|published (?:on|to)) (?:crates\.io|npm|PyPI|Maven Central|RubyGems|Hex|Packagist|NuGet|Docker Hub|pub\.dev)\b`),
		// A build or a release the agent says went through: "The x64 build of 2.1.0 is done".
		lazyRE(`(?i)\b(?:build|release|export|import|backfill|upgrade|reindex)(?: of [\w.+/-]+(?: [\w.+/-]+){0,2})? (?:is|was|has been) (?:now )?(?:done|complete|completed|finished)\b`),
		// What a deploy left running: "The redirect rules are live on production", "now live in staging".
		lazyRE(`(?i)\b(?:is|are|now|went|goes) live (?:on|in) (?:production|prod|staging)\b`),
		// A health check that answers: "`/health` returns 200", "/healthz answers 200", "the readiness probe is passing".
		lazyRE(`(?i)(?:/|\b)(?:health\w*|healthz|readyz|livez|readiness (?:probe|check)s?|liveness (?:probe|check)s?|health ?checks?)\b` + "`?" + `[^.\n]{0,30}?\b(?:returns?|returned|answers?|answered|responds?|responded|is|are|now)\s+(?:with\s+)?(?:(?:an?\s+)?HTTP\s+)?(?:200|204|OK|healthy|passing|green)\b`),
		// A change merged, named by its number, and the run that gated it passing: "#91 is merged to `main`", "the
		// merge-group run, which gates the queue, passed".
		lazyRE(`(?i)#\d+\b[^.\n]{0,40}?\b(?:is|was|has been|got) merged\b|\brun(?:,[^,\n]{1,60},)? passed\b`),
		// A pull or merge request that is there: "PR #913 is open", "opened pull request #42", "MR !17 merged".
		lazyRE(`(?i)\b(?:PR|pull request|MR|merge request)\s+[#!]?\d+\s+(?:is\s+|has been\s+|was\s+)?(?:now\s+)?(?:open|opened|up|created|merged|ready for review)\b|\b(?:opened|created|raised|merged)\s+(?:a\s+|the\s+)?(?:PR|pull request|MR|merge request)\s+[#!]?\d+`),
	}
	// Completion evidence that work was done, without proof it works; a check mark is a list bullet saying done.
	weakCompletionRe = lazyRE(`(?im)(?:^\s*(?:\[[\w.-]+\]\s*)?(?:[-*•✓✔☑]\s+|\d+[.)]\s+)?[*_]{0,2}|\b(?:I|I've|I have|we|we've|we have)\s+(?:now\s+|also\s+|just\s+)?)` + anyOf(
		`added`,
		`created`,
		`implemented`,
		`updated`,
		`fixed`,
		`refactored`,
		`wrote`,
		`written`,
		`removed`,
		`renamed`,
		`moved`,
		`replaced`,
		`introduced`,
		`extracted`,
		`migrated`,
		`configured`,
		`changed`,
		`modified`,
		`deleted`,
		`converted`,
		`upgraded`,
		`bumped`,
		`wired`,
		`applied`,
		`documented`,
		`rewrote`,
		`rewritten`,
		`extended`,
		`simplified`,
		`optimi[sz]ed`,
		`cleaned up`,
		`set up`,
		`ported`,
		`split`,
		// A commit records the work; it proves nothing works, and does not undo a failing run before it.
		`committed`,
	) + `\b`)
	// The new state described as a fact ("the page now supports dark mode"): work done, without proof.
	nowStateRe        = lazyRE(`(?i)\bnow\s+(?:also\s+)?(?:has|have|uses|supports|includes|handles|shows|accepts|validates|streams|remembers|caches|retries|lists|exposes)\b`)
	weakCompletionAny = union([]*pattern{weakCompletionRe, nowStateRe})
	// Per-package (go test) and per-crate (cargo test) result lines: an "ok" among them does not undo a FAIL
	// in the same run's block, since the order is the packages', not time's.
	unitPassRe = lazyRE(`^ok\s+\S|test result: ok\.`)
	unitFailRe = lazyRE(`^\s*(?:FAIL\s+\S|--- FAIL:)|test result: FAILED`)
	// Negation in the clause of a completion match undoes it: "tests do not pass", "wasn't able to make the
	// checks pass", "not committed".
	completionNegationRe = lazyRE(`(?i)\b(?:not|never|no longer|unable|cannot|can't|couldn't|wasn't|weren't|didn't|doesn't|don't|won't|isn't|aren't|failed to|without)\b`)
	failWordRe           = lazyRE(`(?i)\bfail(?:ed|s|ing|ure|ures)?\b`)
	failCountNonzeroRe   = lazyRE(`(?i)\b[1-9]\d*\s+(?:tests?\s+)?(?:failed|failing|failures?)\b`)
	clauseBreakRe        = lazyRE(`[.;!?]\s|,\s+(?:and|but|so)\s`)

	// Failure evidence beyond the error lines: the prose of a failure.
	failurePhraseRes = []*pattern{
		lazyRE(`Traceback \(most recent call last\)`),
		lazyRE(`\bFAIL(?:ED)?\b`),
		lazyRE(`(?i)\b(?:tests?|build|compilation|suite|ci|pipeline|lint(?:er)?|checks?|it|they|this|command|script|deploy(?:ment)?|migration|install(?:ation)?|package|code|binary|server|app|application|service|page|site|pods?|containers?|process|job|worker|function|instance|release|rollout|revision|machines?|replicas?|nodes?|cluster)\)?\s+(?:still\s+|now\s+|also\s+)?(?:fails?|failed|failing|no longer (?:works|renders|starts|builds|compiles|runs|loads|passes|boots)|is failing|are failing|errors? out|breaks|broke|crashe[sd]|crash-?loop(?:s|ing)?|panics|(?:is|are) (?:not healthy|unhealthy|not ready)|does not (?:pass|compile|build|work|run)|doesn't (?:pass|compile|build|work|run)|did not (?:pass|compile|build)|didn't (?:pass|compile|build))\b`),
		lazyRE(`(?i)\b(?:push(?:ing)?|merg(?:e|ing)|rebas(?:e|ing)|publish(?:ing)?|upload(?:ing)?|releas(?:e|ing))\b[^.;:\n]{0,30}?\b(?:failed|fails|was rejected|were rejected|got rejected|is rejected)\b`),
		// A test named by its identifier, in prose: "`test_totals` fails because …", "TestReplicaFailover still fails".
		lazyRE("(?:\\b(?:Test[A-Z_]\\w*|test_\\w+)\\b|`(?:Test[A-Z_]\\w*|test_\\w+|[\\w./-]+\\.(?:test|spec)\\.[jt]sx?)`)\\s+(?:still\\s+|now\\s+|also\\s+)?(?:fails|failed|is failing|keeps failing)\\b"),
		// What runs, up but failing its checks: "the new revision is deployed but unhealthy", "live but not ready".
		lazyRE(`(?i)\b(?:live|up|running|deployed|serving|started|rolled out|reachable)\s+(?:but|yet)\s+(?:still\s+)?(?:unhealthy|not healthy|not ready|crash-?looping|returning (?:5\d\d|errors))\b`),
		// A command, file or target named in a code span, failing: "`deno task build` failed — …", "`make check` still
		// fails". A span that quotes the failure's own words ("`FAILED`") is not followed by them.
		lazyRE("`[^`\\n]{1,120}`\\s+(?:still\\s+|now\\s+|also\\s+)?(?:fails|failed|is failing|keeps failing|errors? out|errored|crashe[sd]|timed out|hung|hangs|exited (?:with )?(?:code|status) [1-9])\\b"),
		// A step of the task that did not take place: "the deployment step, which is part of this task, did not happen".
		lazyRE(`(?i)\b(?:deploy(?:ment)?|release|rollout|push|upload|migration|publish(?:ing)?|upgrade|update|version bump|bump|cutover|switch-?over)\b(?: step)?(?:[^.;\n]|\.\d){0,60}?\b(?:did not|didn't|never) (?:happen|run|go through|take place|complete|succeed)\b`),
		// What was to go out and did not, said of all of it: "nothing was delivered", "nothing got published".
		// Its clause ends there: "nothing was sent to the dead-letter queue" is the good news of a run.
		lazyRE(`(?i)\bnothing (?:was|got|has been|had been) (?:delivered|sent|published|deployed|imported|exported|written|migrated|saved|processed|uploaded)(?:\s*[.:;,!]|\s*$)`),
		// What runs that never got going: "the new pods never became ready", "never came up".
		lazyRE(`(?i)\bnever (?:became|become|got|came|went) (?:ready|healthy|available|up|live)\b`),
		lazyRE(`(?i)\b(?:fails|failed) (?:with|to (?:compile|build|run|start|install|pass|resolve|connect|fetch|load|import|deploy|create|update|apply|publish|push|upload|provision|sync|migrate|roll out|release|launch|boot))\b`),
		// What was to go out and did not, the agent's verdict at its clause's end: "The new handler is not deployed."
		lazyRE(`(?i)\b(?:is|are|was|were) (?:still )?not (?:deployed|released|published|applied|rolled out|shipped|live)(?:\s*[.;,!]|\s*$)`),
		// An agent CLI that stopped at its own limit before the work was done: Claude Code's max turns or budget, aider's
		// "Only 3 reflections allowed, stopping." (aider/coders/base_coder.py), a loop's cap on its iterations.
		lazyRE(`(?i)\breached (?:the )?maximum (?:number of )?(?:turns|budget)|\berror_max_(?:turns|budget)|\bmax(?:imum)? turns reached\b|\bonly \d+ reflections allowed, stopping\b|\b(?:reached|hit|exceeded) (?:the |its )?(?:max(?:imum)?|limit|cap)(?: of)? (?:\d+ )?(?:iterations|steps|reflections|attempts)\b[^.\n]{0,20}\bstopping\b`),
		lazyRE(`(?i)\bpermission denied\b|\bEACCES\b|\boperation not permitted\b|\bsegmentation fault\b|\bcore dumped\b|\bcommand not found\b`),
		lazyRE(`(?i)\b[1-9]\d*\s+(?:tests?\s+)?(?:failed|failing|failures?)\b|\bexit(?:ed)?(?: with)? (?:status|code):? ?[1-9]`),
		lazyRE(`(?i)\bleft (?:in )?(?:a |the )?broken\b|\bin a broken state\b`),
		// The agent CLI stopped by what only a person can change: a usage limit, a login, a key, running as root;
		// and the CLIs' JSON forms of a failed turn.
		lazyRE(oneOf(`(?i)`,
			`\b(?:hit|reached|exceeded) (?:your|the) (?:[\w-]+ )?limit\b`,
			`\busage limit reached\b`,
			`\blimit (?:will )?resets? (?:at|on|in)\b`,
			`\btry again in \d+\s*(?:hours?|days?)\b`,
			`\bnot logged in\b`,
			`\bplease run /login\b`,
			`\binvalid api key\b`,
			`\bauthentication_(?:error|failed)\b`,
			`\b(?:set|configure|specify) (?:an? |the |your )?(?:auth(?:entication)? method|api key)\b`,
			`\b(?:api[ _-]?key|token)\b[^.\n]{0,40}\bmust be (?:set|provided)\b`,
			`\bcould not resolve authentication method\b`,
			`\b(?:cannot|can't|must not) be (?:used|run) (?:as|with|when running as) root\b`,
		)),
		lazyRE(`"is_error"\s*:\s*true|"type"\s*:\s*"(?:turn\.failed|error)"`),
		lazyRE(oneOf(`(?i)`,
			`\b(?:task|attempt|run)\s+(?:has\s+)?failed\b`,
			`\bfailed to complete\b`,
			`\b(?:is|remains|are|still|left) (?:still )?(?:not complete|incomplete|unfinished|not finished)\b`,
			// The agent's verdict on its own work, ending its clause: "so this isn't done.", "the task wasn't finished,
			// …" (not "it isn't done per request", which tells how the code works).
			`\b(?:task|work|this|it)\s+(?:isn't|wasn't|is not|was not|is still not|still isn't)\s+(?:yet\s+)?(?:done|complete|completed|finished)(?:\s+yet)?\s*(?:[.,;:!?)]|$)`,
		)),
	}
	// A failure described as a condition the code handles ("returns 400 when it fails validation") is
	// behaviour, not the run failing.
	conditionalContextRe = lazyRE(`(?i)\b(?:if|when|whenever|unless|until|in case|so that|ensures?|make sure|makes sure|verif(?:y|ies)|checks? that|instead of)\b[^.\n]{0,40}$`)
	// History told as history ("previously failing", "fixed the FAIL in …") is not failure evidence.
	resolvedContextRe = lazyRE(`(?i)` + anyOf(
		`\bfix(?:ed|ing|es)?`,
		`\bresolv(?:ed|ing)`,
		`\baddress(?:ed|ing)`,
		`\bhandl(?:ed|ing)`,
		`\bpreviously`,
		`\bearlier`,
		`\binitially`,
		`\bbefore (?:my|the|this) (?:fix|change)`,
		`\bwas failing`,
		`\bwere failing`,
		`\bused to`,
	) + `\b[^.\n]{0,60}$`)

	// Courtesy closings: finished work offering more, never a question blocking the task.
	courtesyRe = lazyRE(oneOf(`(?i)`,
		`\blet me know (?:if|whether|what you think|how it goes|should you)\b`,
		`\bfeel free\b`,
		`\bhappy to\b`,
		`\bhope (?:this|that|it) helps\b`,
		`\banything else\b`,
		`\bI can also\b`,
		`\bif you(?:'d| would)? (?:like|want|prefer|need)\b`,
		`\b(?:any|further|other|additional) (?:changes|questions|adjustments|tweaks|tuning)\b`,
		`\bjust (?:let me know|ask)\b`,
	))
	// Offers of extra work: courtesy after finished work, a real question otherwise.
	offerRe = lazyRE(oneOf(`(?i)`,
		`\b(?:would|do) you (?:like|want) me to\b`,
		`\bwant me to\b`,
		`\b(?:should|shall|can|could) I (?:also|additionally|next|go ahead and also)\b`,
		`\b(?:also|additionally)\b[^.?]*\?$`,
	))
	// The agent asking or stuck on a decision.
	uncertaintyRes = []*pattern{
		lazyRE(oneOf(`(?i)`,
			`\b(?:should|shall) (?:I|we)\b`,
			`\bwould you (?:prefer|rather)\b`,
			`\bdo you (?:prefer|want|think|agree)\b`,
			`\bwhat (?:would|do) you (?:like|prefer|want|suggest)\b`,
			`\bhow (?:would|do) you (?:like|want)\b`,
			`\bwhich\b[^.?]{0,80}\b(?:do you|would you|should (?:I|we)|is preferred|do we|you want|you prefer)\b`,
		)),
		lazyRE(oneOf(`(?i)`,
			`\b(?:I'm|I am|we're|we are)\s+(?:not sure|unsure|uncertain)\b(?:\s+(?:whether|if|which|what (?:to|you|the)|how (?:to|you|best)|about (?:the|which|whether|how)|of the))?`,
			`\bnot sure (?:whether|if|which)\b`,
			`\bunsure (?:whether|if|which|how)\b`,
			`\b(?:I'm|I am|we're|we are)\s+(?:a bit\s+|somewhat\s+|quite\s+|still\s+)?confused\b`,
			`\b(?:it's|it is|it remains)\s+(?:still\s+)?unclear\s+(?:whether|if|which|what|how)\b`,
		)),
		lazyRE(oneOf(`(?i)`,
			`\b(?:I|we)\s+need\s+(?:some\s+|more\s+|your\s+)?(?:clarification|input|guidance|a decision|direction|confirmation|more (?:information|context|details))\b`,
			`\bneeds? clarification\b`,
			`\b(?:could|can) you (?:please )?(?:clarify|confirm|decide|advise)\b`,
			`\bplease (?:clarify|confirm|advise|decide)\b`,
			// A go-ahead asked for without a question mark: "Confirm that you want me to run it on prod and I'll proceed."
			`\bconfirm (?:that |whether |if )?(?:you (?:want|'d like|would like)|I (?:should|may|can)|it(?:'s| is) (?:ok|okay|fine|safe))\b`,
		)),
		lazyRE(oneOf(`(?i)`,
			// A wait for a person, not for a machine ("I'll wait for the merge group" is the agent's own patience).
			`\bI(?:'ll| will) wait for (?:you|your|that decision|this decision|the (?:decision|answer|go-ahead|approval|reply|choice|confirmation|OK)|a (?:decision|reply|response|go-ahead|choice)|an (?:answer|OK))\b`,
			// A stop held until the person's word: "The rebase is paused until you pick one".
			`\buntil you (?:pick|choose|decide|confirm|tell me|say which|approve)\b`,
			`\b(?:I|we) need\b[^.\n]{0,60}\bfrom you\b`,
			`\btell me (?:which|what|whether|how)\b`,
			// What the agent needs to go on, asked for with what it will do with it: "Tell me the bucket and I'll wire it
			// in", "give me the number of days and I'll fill it in".
			`\b(?:tell|give|send) me (?:the|a|an)\b[^.\n]{0,60}?\band I(?:'ll| will)\b`,
			`\bonce you (?:give|send|provide|share|confirm|decide|tell|grant)\b`,
			`\bwaiting (?:for|on) (?:you|your)\b`,
		)),
		lazyRE(oneOf(`(?i)`,
			`\b(?:I'm|I am|we're|we are) blocked\b`,
			`\bblocked (?:until|on|by) (?:a |the |your |this )?(?:decision|human|clarification|answer|input|product|user|you)`,
			`\bbefore I (?:continue|proceed|go (?:any )?further|make (?:this|that|the) change)\b`,
			// A blocking need handed to a person: "Blocked on credentials.", "I need someone with access to run it".
			`^blocked (?:on|by)\b`,
			`\b(?:I|we) need (?:someone|somebody|a person|a human|an admin(?:istrator)?)\b[^.\n]{0,40}\bto\b`,
			`\bcould go either way\b`,
		)),
		lazyRE(`(?i)\b(?:the|two|three|a few|several|some|possible)\s+(?:possible\s+)?(?:options|approaches|choices|alternatives)\s+(?:are|seem to be|I see|would be)\b[^.\n]{0,40}:|\b(?:I see|there are|here are)\s+(?:two|three|several|a few|some)\s+(?:options|approaches|choices|ways|alternatives)\b`),
		lazyRE(oneOf(`(?i)`,
			`\bI(?: would|'d)? recommend\b[^.?]*\bbut\b`,
			`\bcannot proceed without\b`,
			`\bcan't proceed without\b`,
			`\bunable to proceed without\b`,
			`\bwaiting for (?:your|a|human|the user's) (?:input|decision|answer|confirmation|approval)`,
			// A decision or approval awaited, without a question mark: "Awaiting your OK on the approach above",
			// "waiting for the decision above", "I need approval", "this needs your approval before I …".
			`\b(?:awaiting|waiting (?:for|on)) (?:your |the |a )?(?:decision|choice|answer|approval|go-ahead|OK|sign-off|confirmation)\b`,
			`\b(?:I|we) (?:need|want) (?:your |explicit )?(?:approval|sign-off|go-ahead|OK|okay)\b`,
			`\bneeds? your (?:approval|sign-off|go-ahead|OK|confirmation)\b`,
			`\bwithout your (?:go-ahead|approval|OK|sign-off|confirmation)\b`,
			`\b(?:requires?|needs?) (?:a )?(?:human|product|design|your) (?:decision|input|approval)`,
			`\bAskUserQuestion\b`,
			// A decision asked for as a heading or a label, without a question mark: "Decision needed: how to
			// store …", "Input required on the retention period".
			`(?m)^\W{0,4}(?:decision|input|answer|approval|sign-off|your call)s? (?:needed|required|wanted)\b`,
			// Something asked of the person without a question mark: "Please paste the URL or tell me where it's
			// kept", "could you confirm the region"; and what the agent needs from them: "I need the staging
			// connection string".
			`\b(?:please|could you|can you)\s+(?:paste|send|share|provide|give me|tell me (?:where|which|what|how|whether|if)|point me (?:to|at)|confirm|grant|approve|assign|give (?:me|us))\b`,
			// Something to set up for the agent, and word back when it is: "Please create a token with
			// write:packages, add it as the NPM_PUBLISH_TOKEN secret, and tell me when it's there".
			`\b(?:please|could you|can you)\s+(?:create|add|set(?: up)?|generate|issue|enable|rotate|invite|configure|register|upload|store|install)\b[^?\n]{0,200}?\b(?:tell|let) me (?:know )?(?:when|once|if)\b`,
			`\b(?:tell|let) me (?:know )?(?:when|once) (?:it's|it is|that's|that is|they're|they are|you've|you have)\b`,
			`\bI need (?:(?:the|a|an|your)\s+)?(?:[\w-]+\s+){0,4}?(?:string|url|uri|token|key|password|credentials?|secret|access|permissions?|value|values|name|id|address|path|version|number)\b`,
			// Something the agent needs from the person, said as a need: "I'll need the token, or the right Vault
			// path, from you to finish"; and a step it will not take without asking.
			`\bneed\b[^.;?!\n]{0,80}?\bfrom you\b`,
			`\b(?:don't|do not|won't|will not) want to [^.;?!\n]{1,60}? without asking\b`,
			// Unsure of its own result: "I'm not confident enough in this to call it fixed", "I can't confirm this
			// is the cause".
			`\bI(?:'m| am) not (?:confident|certain)\b`,
			`\bI (?:can't|cannot|can not) confirm (?:this|that|it|whether|if)\b`,
			// A question the agent cannot settle, or hands to the person: "I can't tell whether that's the intended
			// look", "so I'd rather you decide", "I need a call on how to resolve it".
			// (In the present: "I couldn't tell whether …" after a failure reports what the agent did not find out.)
			`\bI (?:can't|cannot|can not) (?:tell|say|work out|determine)(?: from here| yet| for sure| from (?:this|that|the \w+))? (?:whether|if|which)\b`,
			`\b(?:I'd|I would) (?:rather|like|prefer)(?: for)? (?:you|someone|a person|a human) (?:to )?(?:decide|choose|pick|make (?:the|this|that) call|weigh in)\b`,
			`\bI want (?:you|someone|a person|a human) to (?:decide|choose|pick|make (?:the|this|that) call|weigh in)\b`,
			// The choice named as a person's: "so it's a judgement call:", "this one is up to you".
			`\b(?:judge?ment|product|business) call\b`,
			`\bup to you\b`,
			`\bI need (?:a|your) (?:call|decision|answer|ruling) on\b`,
			// The agent holding back to ask: "so I'd rather check with you first", "I want to confirm with you".
			`\b(?:I'd|I would|I want to|I'd like to|I wanted to) (?:rather |first )?(?:check|confirm|clear (?:it|this|that)) (?:it |this |that )?with you\b`,
			// A step only a person can take: "which I can't request myself", "I can't grant that role myself".
			`\b(?:I|we) (?:can't|cannot|can not|am not able to|are not able to)\s+(?:[\w-]+\s+){1,4}?(?:myself|ourselves)\b`,
			`\byour (?:call|decision|preference)\b`,
			`\blet me know (?:which|what you(?:'d)? prefer|how you(?:'d)? like)\b`,
		)),
	}
	// stuckAny is every uncertainty pattern but the plain "should I": those outweigh a courtesy wrapper.
	stuckAny = union(uncertaintyRes[1:])

	// The patterns read on every line or sentence, with the words that let a line skip them (prefilter.go).
	strongCompletionGs = guardAll(strongCompletionRes)
	weakCompletionG    = guard(weakCompletionAny)
	fixedG             = guard(fixedRe)
	specificErrorG     = guard(specificErrorAny)
	errorLineGs        = guardAll(append(append([]*pattern{}, specificErrorRes...), genericErrorRes...))
	keywordErrorG      = guard(keywordErrorRe)
	failurePhraseGs    = guardAll(failurePhraseRes)
	admissionG         = guard(admissionRe)
	workLeftG          = guard(workLeftRe)
	stuckG             = guard(stuckAny)
	shouldIG           = guard(uncertaintyRes[0])
	offerG             = guard(offerRe)
	courtesyG          = guard(courtesyRe)
	addressedG         = guard(addressedRe)
	sideCheckG         = guard(sideCheckRe)
	failCountNonzeroG  = guard(failCountNonzeroRe)

	// A '?' sentence addressed to the user: it names them or opens like a request for a decision.
	// A connective, a "question:" lead-in or a leading clause ("Before I change anything, which should win?")
	// before it does not change that.
	addressedRe = lazyRE(oneOf(`(?i)`,
		`\byou(?:r|'d|'re)?\b`,
		`^(?:(?:however|but|also|so|and|then|one (?:thing|question)|quick question|question)[,:]?\s+|(?:before|after|once|since|given|if|as|while|until|now that|in (?:that|this) case|either way|otherwise|first)\b[^,?]{0,80},\s+)?(?:should|shall|do|does|would|which|can|could|may|is it (?:ok|okay|fine|acceptable)|are we|or|(?:what|where|how|when|who)\b[^?]*\b(?:should|shall)\b)\b`,
		`\bshould (?:the|we|I|it|this|that|these|those|they)\b`,
		// A tool's permission prompt opens with the verb the user grants: "Allow execution of: 'rm'?", "Apply this
		// edit?", "Proceed?", "Overwrite src/app.ts?".
		`^(?:allow|approve|apply|proceed|continue|run|execute|confirm|accept|overwrite|replace|delete|remove|grant|permit|trust|authori[sz]e)\b[^?]{0,160}\?$`,
	))
	// Explicit recommendations in prose; what follows the match is the thing recommended. No "\b" after a
	// colon: "Recommendation: B" has no word boundary there.
	recommendRe = lazyRE(`(?i)\b` + anyOf(
		`I(?: would|'d)? (?:strongly )?recommend\b`,
		`my (?:recommendation|suggestion)(?: is\b|:)`,
		`recommendation:`,
		`recommended:`,
		`I(?: would|'d)? (?:strongly )?suggest\b`,
		`I(?: would|'d)? lean (?:towards?|to)\b`,
		`I(?:'d| would) (?:go with|pick|choose|opt for|take)\b`,
	))
	// A recommendation marked on the option itself: "(Recommended)", "[recommended]", "— recommended".
	recommendedOptRe = lazyRE(oneOf(`(?i)`,
		`[*_]{0,2}[(\[]\s*(?:recommended|my recommendation|suggested)\s*[)\]][*_]{0,2}`,
		`\s[-–—]\s*[*_]{0,2}recommended\b[*_]{0,2}`,
		`\s*(?:←|⬅|<-+)\s*[*_]{0,2}(?:recommended|my pick|my recommendation)\b[*_]{0,2}`,
		`[:,]\s*[*_]{0,2}recommended[*_]{0,2}\s*$`,
	))
	// Inline lettered options: "go to A) stdout  B) a file", "should it be (a) streamed or (b) buffered". Only
	// the ")" and "[A]" forms, since "plan A." is prose; lower case too, which ParseOptions keeps unmixed.
	inlineKeyARe   = lazyRE(`(?:^|\s)(?:\([Aa]\)|[Aa]\)|\[[Aa]\])\s+\S`)
	inlineKeyBRe   = lazyRE(`\s(?:\([Bb]\)|[Bb]\)|\[[Bb]\])\s+\S`)
	letteredLineRe = lazyRE(`^\s*[*_]{0,2}(?:\[[A-Ha-h]\]|\([A-Ha-h]\)|[A-Ha-h][).]|[A-H]:|[Oo]ption\s+[A-Ha-h]\s*[:.)\-–])[*_]{0,2}\s+\S`)
	// "docker: …", "mkdir: …": a program naming itself before its message.
	toolPrefixRe = lazyRE(`^\s*[a-z][\w.-]*: `)
	// A program's log record: a timestamp, a level or logfmt's time opens the line, behind what a log collector puts
	// first (logCollector): "[2024-06-14T10:51:33+00:00] FATAL: …", "worker-1  | 2025-02-11T08:14:03Z pid=7 ERROR: …",
	// glog's "E0614 10:51:33.123 …", "[ERROR] …", "time=… level=error …". What it asks ("PLEASE PROVIDE …", "Could you
	// set …?") is the program's.
	logRecordRe = lazyRE(`^\s*` + logCollector + `(?:` + logStamp + `|[IWEF]\d{4} \d{2}:\d{2}:\d{2}|\[` + logLevel + `\]|` + logLevel + `:\s|time=\S+\s+level=)`)
	listLineRe  = lazyRE(`^\s*(?:[-*•]\s+|\d{1,2}[.)]\s+)\S`)
)

// Interpret judges an agent's final output: completed, failed, or needs_help with the question, options and
// recommendation to put to a human. It honours ctx only at entry: the work is in-memory and bounded.
func (h *Heuristic) Interpret(ctx context.Context, output string) (Interpretation, error) {
	if err := ctx.Err(); err != nil {
		return Interpretation{}, err
	}
	return interpret(output), nil
}

func interpret(output string) Interpretation {
	if r, ok := resultObject(output); ok {
		return interpretResult(r)
	}
	return interpretText(output)
}

// interpretText judges an answer in words.
func interpretText(output string) Interpretation {
	d := newDoc(output)
	if strings.TrimSpace(d.text) == "" {
		return Interpretation{
			Status:  StatusFailed,
			Summary: "The agent produced no output.",
			Error:   "agent produced no output",
			Via:     viaHeuristic,
		}
	}
	if in, ok := explicitMarkers(d); ok {
		return in
	}

	ev := gatherEvidence(d)
	in := Interpretation{Via: viaHeuristic, Summary: summarize(d)}
	failing := ev.unresolvedFailure()
	if failing {
		in.Error = extractError(d)
	}
	switch {
	case ev.asks(failing):
		in.Status = StatusNeedsHelp
		q := readQuestion(d, true, true)
		in.Question, in.Options, in.Recommendation = q.question, q.options, q.recommendation
		if in.Question == "" {
			in.Question = unclearQuestion
		}
	case failing:
		in.Status = StatusFailed
		if in.Error == "" {
			in.Error = truncate(collapse(d.text), 500)
		}
	case ev.completed():
		in.Status = StatusCompleted
	default:
		// Nothing says what happened, but an AskUserQuestion call or an "either X or Y" may still say what
		// the agent wants decided.
		in.Status = StatusNeedsHelp
		in.Question = unclearQuestion
		if q := readQuestion(d, true, true); len(q.options) > 0 {
			in.Options, in.Recommendation = q.options, q.recommendation
			if q.question != "" {
				in.Question = q.question
			}
		}
	}
	return in
}

// evidence is what the output shows, with the position (see at) of the last sign of each kind so that a
// failure fixed later in the output does not count against it.
type evidence struct {
	lastStrong, lastWeak int // position of the last completion evidence; -1 for none
	lastFail             int // position of the last failure evidence
	// lastSide is the position of the last success of a side check only (lint, formatting, types, the build): it
	// shows work was done, but it does not undo a failing test, migration or run before it.
	lastSide int
	// lastMainFail is the position of the last failure that a side check's success cannot undo.
	lastMainFail int
	// lastFix is the position of the agent's last statement that it fixed something.
	lastFix int
	// lastRunFail and lastRunPass are the positions of a test runner's last failing and passing verdicts (its own
	// summary line, not the agent's words), lastTestClaim the agent's last word in prose that the tests pass, and
	// lastOtherStrong the last other proof of completion: a claim that tests pass, with no run after the failing one
	// and nothing fixed since, does not undo the runner's verdict (claimBelied).
	lastRunFail, lastRunPass, lastTestClaim, lastOtherStrong int
	lastAdmission                                            int // position of the agent's last admission that it could not do something
	questions                                                int // real questions and statements of uncertainty
	offers                                                   int // offers of extra work: courtesy after finished (or failed) work
	letteredOptions                                          int // lettered option lines presented in the prose
	// retryOffers are the questions that only offer to try the failed work again (see asks).
	retryOffers int
}

// retryOfferRe offers to try the work again: "Do you want me to try again once the database is up?", "Should I
// re-run it?".
var retryOfferRe = lazyRE(`(?i)\b(?:(?:do|would) you (?:want|like) me to|want me to|(?:should|shall|can) I)\s+(?:\w+\s+)?(?:try (?:it |this |that |the \w+ )?again|retry|re-?run|run (?:it|them|this|that|the \w+) again)\b`)

// at is a position in the output, line then column: evidence is ordered within a line too, since agents
// often tell a whole story on one line ("Two tests failed at first. I fixed the fixture and all 48 pass.").
// clip bounds an output well below 1<<20 bytes, so columns never spill into the line bits.
func at(line, col int) int { return line<<20 | col }

func gatherEvidence(d *doc) evidence {
	ev := evidence{lastStrong: -1, lastWeak: -1, lastFail: -1, lastAdmission: -1, lastSide: -1, lastMainFail: -1, lastFix: -1,
		lastRunFail: -1, lastRunPass: -1, lastTestClaim: -1, lastOtherStrong: -1}
	ev.readLines(d)
	sentences := d.sentences()
	ev.readAdmissions(d, sentences)
	ev.readAsks(d, sentences)
	return ev
}

// readLines is the pass over the lines: where completion, fixes and failures are claimed, and the lettered options.
func (ev *evidence) readLines(d *doc) {
	var blocks lineBlocks
	var cases casesList
	cleanup := false // in the runner's post-job cleanup (postJobRe), up to the log's end
	for i, l := range d.lines {
		low := fold(l)
		switch {
		case postJobRe.MatchString(l):
			cleanup = true
		case strings.TrimSpace(l) == "":
			cleanup = false
		}
		if cleanup {
			continue // what the runner does after the job's steps is not the job's result
		}
		failing, side := blocks.next(l, low)
		inCases := cases.next(d.proseLines[i])
		if prose := d.proseLines[i]; letteredLineRe.MatchString(prose) {
			ev.letteredOptions += max(1, len(ParseOptions(prose)))
		} else if inlineOptions(prose) {
			ev.letteredOptions += len(ParseOptions(prose))
		}
		// A runner's result line says pass or fail by its own format; its other words (a test's name, "0 tests
		// failed") are not read as prose. A pass in a block where something failed does not undo the failure.
		switch v, build := runnerVerdict(l, low); v {
		case verdictFail:
			blocks.failed = true
			ev.lastFail = at(i, 0)
			if !build {
				ev.lastMainFail, ev.lastRunFail = at(i, 0), at(i, 0)
			}
			continue
		case verdictPass:
			if !build {
				ev.lastRunPass = at(i, 0)
			}
			switch {
			case blocks.failed:
			case build || side:
				ev.lastSide = at(i, 0)
			default:
				ev.lastStrong = at(i, 0)
			}
			continue
		}
		if c := lastUnnegatedOf(strongCompletionGs, l, low, failing); c >= 0 {
			switch {
			case side:
				ev.lastSide = at(i, c)
			default:
				ev.lastStrong = at(i, c)
				if mainCheckRe.MatchString(d.proseLines[i]) && testClaimRe.MatchString(d.proseLines[i]) {
					ev.lastTestClaim = at(i, c)
				} else {
					ev.lastOtherStrong = at(i, c)
				}
			}
		}
		// The run done again after a failure, said to be clean ("the second run is clean"), is proof, whatever it ran.
		if strings.Contains(low, "run ") {
			if loc := rerunCleanRe.FindStringIndex(l); loc != nil {
				ev.lastStrong, ev.lastOtherStrong = max(ev.lastStrong, at(i, loc[0])), max(ev.lastOtherStrong, at(i, loc[0]))
			}
		}
		if c := lastUnnegated(weakCompletionG, l, low, failing); c >= 0 {
			ev.lastWeak = at(i, c)
		}
		if c := lastUnnegated(fixedG, l, low, failing); c >= 0 {
			ev.lastFix = at(i, c)
		}
		if c := lastFailure(l, low); c >= 0 && !inCases {
			ev.lastFail = at(i, c)
			if !sideCheckRe.MatchString(l) && !compileErrorRe.MatchString(l) {
				ev.lastMainFail = at(i, c)
			}
		}
	}
}

// postJobRe is where GitHub Actions' runner starts cleaning up after a job's steps ("Post job cleanup."): an error
// there (a submodule's credentials, an orphan process) is the runner's, not the job's.
var postJobRe = lazyRE(`^\s*Post job cleanup\.\s*$`)

// rerunCleanRe is the agent's word that the run it did again went through: "the second run is clean", "the rerun was
// green".
var rerunCleanRe = lazyRE(`(?i)\b(?:second|new|last|final|next|re-?)\s*run (?:is|was) (?:clean|green|successful)\b`)

// casesLeadRe introduces a list of the cases a design handles: "Notes on failure modes considered:", "Edge cases
// covered:", "## Error handling". Its items tell what happens when something fails, not that the run failed.
var casesLeadRe = lazyRE(`(?i)\b(?:failure (?:modes?|cases|scenarios)|error (?:cases|scenarios|handling)|edge cases|corner cases|(?:cases|scenarios) (?:handled|covered|considered)|what happens (?:when|if))\b`)

// casesList follows a list of the cases a design handles (see casesLeadRe): from its lead-in (a heading or a line
// ending in a colon) over its items and their indented lines, up to the first other line of prose.
type casesList struct{ on bool }

// next reads prose line l and reports whether it is an item of such a list.
func (c *casesList) next(l string) bool {
	t := strings.TrimSpace(l)
	switch {
	case t == "":
		return false
	case (mdHeadingRe.MatchString(l) || strings.HasSuffix(strings.TrimRight(t, "*_ "), ":")) && !listLineRe.MatchString(l):
		c.on = casesLeadRe.MatchString(l)
		return false
	case c.on && (listLineRe.MatchString(l) || l[0] == ' ' || l[0] == '\t'):
		return true
	}
	c.on = false
	return false
}

// lineBlocks follows the blocks of consecutive lines that a line belongs to: a block where a unit failed, and the
// output of a side check's command.
type lineBlocks struct {
	failed  bool // a unit failed in the current block of consecutive non-blank lines
	sideCmd bool // the line is in the output of a side check's command
}

// next reads line l: the spans of it where no completion counts (a suite summary with failures, "Tests: 2 failed,
// 30 passed", is not a pass whatever the order inside its sentence), and whether it is a side check's.
func (b *lineBlocks) next(l, low string) (failing [][2]int, side bool) {
	if failCountNonzeroG.may(low) {
		failing = failCountSentences(l)
	}
	blank := strings.TrimSpace(l) == ""
	switch {
	case blank:
		b.failed = false
	case unitFailRe.MatchString(l):
		b.failed = true
	}
	if b.failed && unitPassRe.MatchString(l) {
		failing = append(failing, [2]int{0, len(l)})
	}
	// A command line starts a block of its own output: "$ ruff check ." makes the "All checks passed!" under it
	// a side check's.
	switch {
	case commandLineRe.MatchString(l):
		b.sideCmd = sideCheckG.match(l, low) && !mainCheckRe.MatchString(l)
	case blank || strings.HasPrefix(strings.TrimSpace(l), "```"):
		b.sideCmd = false
	}
	return failing, b.sideCmd || sideCheckG.match(l, low) && !mainCheckRe.MatchString(l)
}

// personsStepRe is an admission that is no failure of the work: a step the agent cannot take itself, for a person to
// take it ("I can't request that myself"), or a question it cannot settle ("I can't tell whether that's intended").
var personsStepRe = lazyRE(`(?i)^(?:I|we) (?:can't|cannot|can not|am not able to|are not able to)\s+(?:(?:[\w-]+\s+){1,4}?(?:myself|ourselves)\b|(?:tell|say|work out|determine|decide) (?:whether|if|which|what)\b)`)

// handOffRe hands the decision to the person in the same sentence as what the agent cannot do: "… the shared repo,
// which I can't push to, so I'd rather you decide".
var handOffRe = lazyRE(`(?i)\bI'd rather you\b|\b(?:you(?:'ll| will)?|someone) (?:need|needs|have|has) to (?:decide|choose|pick|do|push|grant|approve|run)\b|\b(?:your|a person's|someone's) (?:call|decision)\b`)

// readAdmissions is the pass over the sentences that finds the last admission of work not done.
func (ev *evidence) readAdmissions(d *doc, sentences []sentence) {
	for _, s := range sentences {
		low := fold(s.text)
		var loc []int
		if admissionG.may(low) {
			loc = admissionRe.FindStringIndex(s.text)
		}
		if loc == nil && workLeftG.may(low) {
			loc = workLeftRe.FindStringIndex(s.text)
		}
		// "I can't request that myself" asks a person to take the step (uncertaintyRes); it admits no failure.
		if loc != nil && !resolvedBefore(s.text[:loc[0]]) &&
			!personsStepRe.MatchString(s.text[loc[0]:]) && !handOffRe.MatchString(s.text) {
			// The admission's column on the sentence's last line; a phrase wrapped across lines counts from
			// the start of that line.
			col := max(0, strings.Index(d.lines[s.line], d.restore(s.text[loc[0]:loc[1]])))
			ev.lastAdmission = max(ev.lastAdmission, at(s.line, col))
		}
	}
}

// readAsks is the pass over the sentences that counts real questions and offers, leaving out the tool's output, a
// question the agent answers itself in the next sentence, and one its paragraph opens by putting out of the task
// ("Optional, and I'm not waiting on this: … Want me to …?").
func (ev *evidence) readAsks(d *doc, sentences []sentence) {
	last := lastProse(sentences)
	for k, s := range sentences {
		if d.toolOutput(s) || k+1 < len(sentences) && selfAnswered(s.text, sentences[k+1].text, sentences[k+1].unit == s.unit) ||
			decidedAfter(sentences, k) ||
			k > 0 && sentences[k-1].unit == s.unit && strings.HasSuffix(s.text, "?") && outOfScopeRe.MatchString(strings.TrimSpace(sentences[k-1].text)) {
			continue
		}
		kind := classifyAsk(s.text, k == last)
		if kind != askReal && waitsForChoice(d, s) {
			kind = askReal
		}
		switch kind {
		case askReal:
			ev.questions++
			// An offer to try again that names another way ("Should I re-run it with X, or add Y?") asks for a choice.
			if retryOfferRe.MatchString(s.text) && len(sentenceOptions(s.text)) < 2 {
				ev.retryOffers++
			}
		case askOffer:
			ev.offers++
		}
	}
}

// waitsForWordRe puts off what the agent will do until the person's word: "Let me know and I'll push the change",
// "Say the word and I'll switch it". After finished work it is courtesy; under choices it offered, it waits for the
// choice (waitsForChoice).
var waitsForWordRe = lazyRE(`(?i)\b(?:let me know|say the word|give me (?:the|a) (?:go-ahead|word|nod)|just say)(?:,)? and (?:I'll|I will)\b`)

// waitsForChoice reports a sentence that waits for the person's word (waitsForWordRe) under choices the agent
// offered before it: a block put as options (by its keys, its lead-in or a CLI's cursor), two or more of them.
func waitsForChoice(d *doc, s sentence) bool {
	if !strings.Contains(s.text, " I'll") && !strings.Contains(s.text, " I will") || !waitsForWordRe.MatchString(s.text) {
		return false
	}
	for _, b := range listBlocks(d) {
		if b.start < s.line && b.offered {
			if n := len(b.options(d)); n >= 2 {
				return true
			}
		}
	}
	return false
}

// sentenceEndInLineRe ends a sentence inside a line: punctuation, space, then anything but a lower-case
// letter (so "e.g. foo" and "v1.2" do not split).
var sentenceEndInLineRe = lazyRE(`[.!?]\s+[^a-z\s]`)

// failCountSentences returns the spans of l's sentences that report a nonzero failure count not told as
// history: no completion evidence inside them counts.
func failCountSentences(l string) [][2]int {
	var spans [][2]int
	start := 0
	ends := sentenceEndInLineRe.FindAllStringIndex(l, -1)
	for k := 0; k <= len(ends); k++ {
		end := len(l)
		if k < len(ends) {
			end = ends[k][1] - 1
		}
		seg := l[start:end]
		if loc := failCountNonzeroRe.FindStringIndex(seg); loc != nil && !resolvedBefore(seg[:loc[0]]) {
			spans = append(spans, [2]int{start, end})
		}
		start = end
	}
	return spans
}

// lastUnnegatedOf is lastUnnegated of each of gs, the last of them: a line is read by the patterns whose words are
// in it.
func lastUnnegatedOf(gs []*guarded, s, low string, skip [][2]int) int {
	last := -1
	for _, g := range gs {
		last = max(last, lastUnnegated(g, s, low, skip))
	}
	return last
}

// lastUnnegated returns the column of the last match of re in s with no negation in the match or earlier
// in its clause and outside the skip spans, or -1.
func lastUnnegated(g *guarded, s, low string, skip [][2]int) int {
	last := -1
	if !g.may(low) {
		return last
	}
	for _, m := range g.p.FindAllStringIndex(s, -1) {
		if inSpans(m[0], skip) {
			continue
		}
		clause := s[:m[1]]
		if b := clauseBreakRe.FindAllStringIndex(s[:m[0]], -1); len(b) > 0 {
			clause = s[b[len(b)-1][1]:m[1]]
		}
		// "test failed, to rerun pass --lib" names a failure inside the would-be pass.
		if match := s[m[0]:m[1]]; !completionNegationRe.MatchString(clause) && (!failWordRe.MatchString(match) || noFailuresRe.MatchString(match)) {
			last = m[0]
		}
	}
	return last
}

// noFailuresRe counts no failure: "0 failed", "no failures", "zero errors".
var noFailuresRe = lazyRE(`(?i)\b(?:0|no|zero) (?:failed|failing|failures?|errors?|test failures|failing tests)\b`)

func inSpans(i int, spans [][2]int) bool {
	for _, sp := range spans {
		if i >= sp[0] && i < sp[1] {
			return true
		}
	}
	return false
}

// lastFailure returns the column of the last failure evidence in a line, or -1: an error line's message
// (behind any frame a tool draws), or the prose of a failure, neither told as something already fixed; the
// prose not a condition the code handles either.
func lastFailure(l, low string) int {
	if strings.TrimSpace(l) == "" {
		return -1
	}
	last := -1
	u := undecorated(l)
	frame := len(l) - len(u)
	// A warning or a note at a location is no error line, whatever pattern of one it fits.
	errorLines := errorLineGs
	if warningAtRe.MatchString(u) {
		errorLines = nil
	}
	for _, g := range errorLines {
		if !g.may(low) {
			continue
		}
		for _, loc := range g.p.FindAllStringIndex(u, -1) {
			if !resolvedBefore(u[:loc[0]]) {
				last = max(last, frame+loc[0])
			}
		}
	}
	for _, g := range failurePhraseGs {
		if !g.may(low) {
			continue
		}
		for _, loc := range g.p.FindAllStringIndex(l, -1) {
			if !resolvedBefore(l[:loc[0]]) && !conditionalContextRe.MatchString(l[:loc[0]]) && !historyAfterRe.MatchString(l[loc[1]:]) &&
				!expectedAfterRe.MatchString(l[loc[1]:]) && !explainedLines(l, loc[0]) {
				last = max(last, loc[0])
			}
		}
	}
	return last
}

// expectedAfterRe tells the failure before it, in the rest of its sentence, as one the run expects or ignores: "The
// `fatal: … FAILED!` on web-01 is the certbot dry-run task, which has `ignore_errors: true`", "the 2 failures are
// expected (xfail)".
// An assertion's words are not that: "fails because the value is expected to be 3" names what the test wanted.
var expectedAfterRe = lazyRE(`(?i)^[!?]*[^.;!?\n]{0,120}?\b(?:(?:is|are|was|were) (?:expected(?:\s*[:.,;)]|\s+(?:here|behaviou?r|and|because|since|as|when|while|for now)\b|\s*$)|ignored|intentional|by design|harmless|benign)|ignore_errors|can be (?:safely )?ignored|expected to fail)`)

// explainedLines reports a failure's words at i inside a code span that the agent goes on to explain as lines of the
// output ("The `FAILED - RETRYING` lines are the wait loop doing its job"): the lines it quotes were read where the
// tool printed them, and the quote adds nothing to them.
func explainedLines(l string, i int) bool {
	if strings.Count(l[:i], "`")%2 == 0 {
		return false // not inside a code span
	}
	end := strings.IndexByte(l[i:], '`')
	return end >= 0 && explainedLinesRe.MatchString(l[i+end+1:])
}

// explainedLinesRe follows a code span that names lines of output, with what they are: "lines are …", "messages come
// from …", "output just means …".
var explainedLinesRe = lazyRE(`(?i)^\s+(?:log\s+)?(?:lines?|messages?|entries|output)\s+(?:above\s+|in the log\s+)?(?:are|is|were|was|come|comes|came|just|only|mean|means|show|shows)\b`)

// historyAfterRe tells the failure before it as history in the words after it: "… was the test failing before my
// change".
var historyAfterRe = lazyRE(`(?i)^[^.;!?\n]{0,30}?\bbefore (?:my|the|this) (?:change|fix|patch)\b`)

// contrastRe starts a new clause that can undo the one before: "I fixed the parser, but the build still fails".
var contrastRe = lazyRE(`(?i)\b(?:but|however|although|though|still)\b|;`)

// resolvedBefore reports whether the text leading up to a failure, in the failure's own clause, tells it as
// already fixed.
func resolvedBefore(leadIn string) bool {
	if locs := contrastRe.FindAllStringIndex(leadIn, -1); len(locs) > 0 {
		leadIn = leadIn[locs[len(locs)-1][1]:]
	}
	return resolvedContextRe.MatchString(leadIn)
}

var (
	// Checks beside the task's own tests: their success says the code is tidy and builds, not that it works.
	sideCheckRe = lazyRE(`(?i)\b` + anyOf(
		`lint(?:er|ing)?`,
		`golangci-lint`,
		`eslint`,
		`ruff`,
		`flake8`,
		`pylint`,
		`rubocop`,
		`clippy`,
		`fmt`,
		`gofmt`,
		`rustfmt`,
		`prettier`,
		`black`,
		`isort`,
		`format(?:ting|ted)?`,
		`mypy`,
		`pyright`,
		`tsc`,
		`type-?check(?:ing|s)?`,
		`typecheck`,
		`vet`,
		`staticcheck`,
		`(?:go|cargo|npm run) build`,
		`build`,
		`compil(?:e|es|ed|ation)`,
	) + `\b`)
	// The agent saying it fixed something: "Fixed the comparison …", "I've resolved the race …".
	fixedRe = lazyRE(`(?im)(?:^\s*(?:[-*•✓✔☑]\s+|\d+[.)]\s+)?[*_]{0,2}|\b(?:I|I've|I have|we|we've|we have)\s+(?:now\s+|also\s+|then\s+)?)(?:fixed|resolved|addressed|corrected|repaired)\b`)
	// A shell command as agents quote them: "$ mypy src", "> eslint .".
	commandLineRe = lazyRE(`^\s*[$>]\s+\S`)
	// What says the task's behaviour was checked: tests, specs, the suite, every check.
	mainCheckRe = lazyRE(`(?i)\b(?:tests?|specs?|suite|all (?:the )?checks|e2e|end-to-end|pytest|jest|vitest|rspec|go test|cargo test|npm test)\b`)
	// Compiler and type errors: failures a clean build or type check does answer.
	compileErrorRe = lazyRE(oneOf(`(?i)`,
		`\berror\[E\d+\]`,
		`\berror TS\d+`,
		`\bundefined:`,
		`\bcannot find (?:symbol|name|value|type)`,
		`\bsyntax ?error`,
		`\b(?:does not|doesn't|did not|didn't|could not|failed to) (?:compile|build)\b`,
		`\bbuild failed\b`,
	))
)

// unresolvedFailure: failure evidence after the last completion evidence, or the agent admitting it could
// not do something with no proof of success after that. A failing test, migration or run is undone only by proof
// (a pass, "done") or the agent saying it fixed something: neither a side check's success (lint, types, the build)
// nor an account of other work moves past it.
func (ev evidence) unresolvedFailure() bool {
	if ev.claimBelied() {
		return true
	}
	if ev.lastMainFail >= 0 && ev.lastMainFail > max(ev.lastStrong, ev.lastFix) {
		return true
	}
	if ev.lastFail >= 0 && ev.lastFail > max(ev.lastStrong, ev.lastWeak, ev.lastSide) {
		return true
	}
	return ev.lastAdmission >= 0 && ev.lastAdmission > ev.lastStrong
}

// claimBelied reports the agent's word that the tests pass after a test runner's failing verdict, with no run passing,
// nothing fixed and no other proof since: the runner's own summary ("Tests  2 failed | 311 passed") stands against a
// claim nothing shows ("the test suite is passing").
func (ev evidence) claimBelied() bool {
	return ev.lastRunFail >= 0 && ev.lastTestClaim > ev.lastRunFail &&
		ev.lastRunFail > max(ev.lastRunPass, ev.lastFix, ev.lastOtherStrong)
}

// testClaimRe is the agent's word, in prose, that the tests pass: "the test suite is passing", "all tests pass".
var testClaimRe = lazyRE(`(?i)\b(?:pass|passes|passed|passing|green)\b`)

// asks reports a question for the human. An offer of more work is a question only when there is no result
// to offer it on: after finished work it is courtesy, and after a failure the failure is what matters (the
// decide judgement then chooses between retrying and asking). Lettered options with nothing proving the
// task done are a choice put to the human even without a question mark.
func (ev evidence) asks(failing bool) bool {
	switch {
	// After a failure, an offer to try again is the decide judgement's to take (retry or escalate), not a question
	// for a person: the failure is what the output says.
	case ev.questions > 0:
		return !failing || ev.questions > ev.retryOffers
	case ev.offers > 0:
		return !failing && !ev.completed()
	}
	return ev.letteredOptions >= 2 && !failing && ev.lastStrong < 0
}

func (ev evidence) completed() bool {
	return ev.lastStrong >= 0 || ev.lastWeak >= 0 || ev.lastSide >= 0
}

// inlineOptions reports lettered options presented inside a line of prose.
func inlineOptions(s string) bool {
	return inlineKeyARe.MatchString(s) && inlineKeyBRe.MatchString(s) && len(ParseOptions(s)) >= 2
}

// toolOutput reports a sentence on an error line: a tool's message ("docker: Cannot connect to the Docker
// daemon… Is the docker daemon running?") is not the agent asking. Error keywords alone do not make a line
// tool output: "Should it return 403 Forbidden?" is the agent's.
func (d *doc) toolOutput(s sentence) bool {
	if d.toolLines == nil {
		d.toolLines = make([]uint8, len(d.lines))
	}
	if v := d.toolLines[s.line]; v != 0 {
		return v == 2
	}
	l := d.lines[s.line]
	low := fold(l)
	tool := logRecordRe.MatchString(l) || specificErrorG.match(l, low) || keywordErrorG.match(l, low) && toolPrefixRe.MatchString(l)
	d.toolLines[s.line] = 1
	if tool {
		d.toolLines[s.line] = 2
	}
	return tool
}

// lastProse is the index of the last sentence that is not a list item: a question followed by its options
// is still the agent's last word.
func lastProse(ss []sentence) int {
	for k := len(ss) - 1; k >= 0; k-- {
		if !letteredLineRe.MatchString(ss[k].text) && !listLineRe.MatchString(ss[k].text) {
			return k
		}
	}
	return -1
}

type askKind int

const (
	askNone askKind = iota
	askReal
	askOffer
	askCourtesy
)

// explainOfferRe is an offer to explain the work, not to do more of it: courtesy, question or not.
var explainOfferRe = lazyRE(`(?i)\b(?:explain|walk you through|go (?:over|through)|clarify)\b`)

// outOfScopeRe puts the question before it out of the task, so that it waits for no answer: "That's beyond this
// task, so I left it.", "(Not required for this task.)", "Probably worth a separate ticket.", "Happy to do that as
// a follow-up." An offer of optional extra work after finished work, marked so, is not a question for a person.
var outOfScopeRe = lazyRE(oneOf(`(?i)`,
	`^\(?(?:that(?:'s| is)|this is|it(?:'s| is))\s+(?:\w+\s+)?(?:beyond|outside|out of)\s+(?:the\s+)?(?:scope|this task|this change|this PR)`,
	`\b(?:not|isn't|aren't|wasn't) (?:part of|in scope for|required for|needed for|necessary for|within the scope of) this (?:task|change|PR|ticket)\b`,
	// The agent says it does not wait for the answer: "I'm not waiting on this", "no need to answer now".
	`\b(?:I'm|I am) not waiting (?:on|for) (?:this|that|it|an answer|a reply)\b`,
	`\bno need to (?:answer|reply|respond)\b`,
	`\b(?:worth|for|in|as|is|be) a separate (?:ticket|task|issue|PR|pull request|change)\b`,
	`\bas a (?:separate )?follow-?up\b`,
	`^\(?(?:optional|not required|out of scope)\b`,
	// "That's optional.", "It is entirely optional": the offer before it waits for nothing.
	`^\(?(?:that(?:'s| is)|this is|it(?:'s| is)|both are|either is)\s+(?:\w+\s+)?optional\b`,
))

// answerRe opens an answer: "Yes — …", "No, …", "Short answer: …".
var answerRe = lazyRE(`(?i)^(?:yes|no|nope|yep|it does|it doesn't|it did|it didn't|they do|they don't|short answer|answer)\b\s*[-—–:,.!]`)

// settledQuestionRe opens a question the agent tells as one it looked into itself: "One design point I checked:
// should …?", "I considered whether …?". Followed in its paragraph by what the agent found, it reports the agent's
// own reasoning, not a question for the human.
var settledQuestionRe = lazyRE(`(?i)^(?:[\w\s-]{0,40}?\b(?:I|we)\s+(?:checked|considered|looked (?:at|into)|verified|investigated|weighed|settled|resolved|confirmed|asked myself)\b[^:?]{0,20}:|(?:I|we)\s+(?:also\s+)?(?:checked|considered|verified|investigated|wondered|asked myself)\s+(?:whether|if)\b)`)

// decidedRe is the agent telling what it chose, as the consequence of what it found: "…, so I used
// invalidate-on-write as well", "so I wrote it with `change`", "I went with the first".
var decidedRe = lazyRE(`(?i)(?:\b(?:so|therefore|hence|thus)\s+(?:I|we)(?:'ve| have)?|^(?:I|we))\s+(?:used|went with|gone with|chose|chosen|picked|opted for|decided (?:to|on)|settled on|kept|wrote|written|implemented|followed|stuck with|matched|removed|dropped|deleted|added|left|made)\b`)

// provisionalRe marks a choice as held until someone answers: "I used cents for now", "as a placeholder".
var provisionalRe = lazyRE(`(?i)\b(?:for now|for the moment|provisionally|as a placeholder|as a stopgap|temporarily|until (?:you|someone|somebody|we hear|I hear))\b`)

// decidedAfter reports a question (sentence k) the agent settles itself in its own paragraph: one of the two
// sentences after it tells what it chose, and not as a choice held until someone answers.
func decidedAfter(sentences []sentence, k int) bool {
	if !strings.HasSuffix(sentences[k].text, "?") {
		return false
	}
	for j := k + 1; j < len(sentences) && j <= k+2 && sentences[j].unit == sentences[k].unit; j++ {
		if decidedRe.MatchString(sentences[j].text) && !provisionalRe.MatchString(sentences[j].text) {
			return true
		}
	}
	return false
}

// selfAnswered reports a question the agent answers itself, or puts out of the task's scope, in the next sentence,
// or that it opens as one it looked into and goes on about in the same paragraph (sameUnit: next is in q's).
func selfAnswered(q, next string, sameUnit bool) bool {
	next = strings.TrimSpace(next)
	return strings.HasSuffix(q, "?") && (answerRe.MatchString(next) || outOfScopeRe.MatchString(next) ||
		sameUnit && settledQuestionRe.MatchString(q))
}

// classifyAsk says whether a sentence asks the human something, and how.
func classifyAsk(s string, last bool) askKind {
	question := strings.HasSuffix(s, "?")
	low := fold(s)
	switch {
	// Being stuck outweighs a polite wrapper: "let me know, I'm not sure whether…" still asks.
	case stuckG.match(s, low):
		return askReal
	// An offer put as a question ("Do you want me to also…?") waits for its answer, after finished work too; the
	// same offer as a statement ("Let me know if you'd like me to…") does not.
	case question && offerG.match(s, low) && !explainOfferRe.MatchString(s):
		return askReal
	case courtesyG.match(s, low):
		return askCourtesy
	case offerG.match(s, low):
		return askOffer
	case shouldIG.match(s, low):
		return askReal
	case question && (last || addressedG.match(s, low)):
		return askReal
	}
	return askNone
}

// asked is what a human needs to answer the agent.
type asked struct {
	question       string
	options        []string
	recommendation string
}

// readQuestion finds the agent's question, the options around it and any recommendation in the prose.
// The question is the last real question sentence (with the sentence before it when it is too short to
// stand alone, like "What would you prefer?"), else the paragraph stating the uncertainty, else an offer
// that introduces a list ("Would you like me to:"). An AskUserQuestion call, when there is one, is the
// question and its options as the agent structured them.
func readQuestion(d *doc, wantQuestion, wantOptions bool) asked {
	var a asked
	sentences := d.sentences()
	qIdx := questionSentence(d, sentences)
	qLine := -1
	if qIdx >= 0 {
		qLine = sentences[qIdx].line
	}
	var opts []choice
	var block listBlock // the lines of the options found in a block, if any: no context for the question
	if q, o, ok := askUserQuestion(d.text); ok && (wantQuestion || wantOptions) {
		if wantQuestion && q != "" {
			a.question = q
		}
		opts = o
	} else if wantOptions {
		// An OK asked for the option the agent would pick ("I'd go with the first row, but … I want your OK") asks
		// about the options, not about a plan: it is not a yes/no question.
		closed := qIdx >= 0 && closedQuestion(sentences[qIdx].text) && recommendedPhrase(sentences[qIdx].text) == ""
		pointsBack := qIdx >= 0 && pointsBackRe.MatchString(sentences[qIdx].text)
		opts, block = findOptions(d, qLine, closed, pointsBack)
		// A question that names its alternatives itself ("Should I backport this, or leave it on main?") asks about
		// them, not about a list before it that nothing offers (the work done, the checks that passed).
		if qIdx >= 0 && len(opts) > 0 && !block.offered && block.start < qLine {
			if inline := sentenceOptions(sentences[qIdx].text); len(inline) >= 2 {
				opts, block = inline, listBlock{}
			}
		}
		if len(opts) == 0 {
			opts = eitherOrNear(sentences, qIdx, closed)
		}
	}
	if qIdx >= 0 && wantQuestion && a.question == "" {
		a.question = d.restore(questionText(sentences, qIdx, block))
	}
	for i := range opts {
		opts[i].label = d.restore(opts[i].label)
	}
	if wantOptions {
		a.options = optionLabels(opts)
	}
	a.recommendation = recommendationOf(d, sentences, opts, a.options, block)
	return a
}

// questionSentence is the index of the sentence that asks, or -1: the last real question; else the first sentence
// that says the agent is unsure or stuck; else the first that offers a choice inline ("Logs can go to A) stdout
// B) …": the choice itself is the question); else the last offer without a question mark, as a lead-in to its list
// ("Would you like me to:").
func questionSentence(d *doc, sentences []sentence) int {
	last := lastProse(sentences)
	for k := len(sentences) - 1; k >= 0; k-- {
		s := sentences[k].text
		if !d.toolOutput(sentences[k]) && strings.HasSuffix(s, "?") && classifyAsk(s, k == last) >= askReal &&
			classifyAsk(s, false) != askCourtesy {
			return k
		}
	}
	for k, s := range sentences {
		if uncertaintyRes[0].MatchString(s.text) || stuckAny.MatchString(s.text) || waitsForChoice(d, s) {
			return k
		}
	}
	for k, s := range sentences {
		if inlineOptions(s.text) {
			return k
		}
	}
	for k := len(sentences) - 1; k >= 0; k-- {
		if !d.toolOutput(sentences[k]) && classifyAsk(sentences[k].text, false) == askOffer {
			return k
		}
	}
	return -1
}

// recommendationOf is what the agent recommends: the option its last recommending phrase names, else the option it
// marked, else the one option a sentence outside the options' own block speaks for (evaluativePick), else the
// phrase's clause as it wrote it.
func recommendationOf(d *doc, sentences []sentence, opts []choice, labels []string, block listBlock) string {
	// The last explicit cue, else the last pick named first and praised.
	phrase, explicit := "", false
	for _, s := range sentences {
		if p, e := recommendedCue(s.text); p != "" && (e || !explicit) {
			phrase, explicit = d.restore(p), e
		}
	}
	if l, ok := resolveRecommendation(phrase, labels); ok {
		return l
	}
	if marked := markedOption(opts); marked != "" {
		return marked
	}
	if phrase == "" {
		if l, ok := evaluativePick(sentences, labels, block); ok {
			return l
		}
	}
	if phrase != "" {
		return truncate(recommendedClause(phrase), 500)
	}
	return ""
}

// closedQuestionRe is a yes/no question: an auxiliary verb and its subject opening the question (or its
// last clause), with no alternatives inside it. Its answer is yes or no, so a list near it is the plan or
// the findings it is about, not options.
var (
	closedQuestionRe = lazyRE(`(?i)(?:^[*_]*|[:;,—–][*_]*\s*|\b(?:so|but|and|then|also)\s+)(?:should|shall|can|could|may|do|does|did|is|are|was|were|would|will|have|has)\s+(?:I|we|you|it|this|that|they|there|the|these|those)\b[^?]*\?$`)
	openQuestionRe   = lazyRE(`(?i)\b(?:or|which|what|how|where|when|whether|one of|any of|between)\b`)
)

// pointsBackRe is a question that picks among the list before it: "Which of these should I fix first?", "Which
// one do you want?".
var pointsBackRe = lazyRE(`(?i)\b(?:which|what)\s+(?:one\s+|ones\s+)?of\s+(?:these|those|them|the above)\b|\bwhich\s+(?:one|ones)\b`)

// approvalRe asks for a go-ahead without a question mark ("Awaiting your OK on the plan above.", "I won't run it
// without your approval."): its answer is yes or no too, and the plan above it is what is approved, not options.
var approvalRe = lazyRE(`(?i)\b(?:awaiting|waiting (?:for|on)|need|needs|want|without)\s+(?:your |the |a |an |explicit )?(?:OK|okay|approval|go-ahead|sign-off|green light)\b`)

func closedQuestion(s string) bool {
	return (closedQuestionRe.MatchString(s) || approvalRe.MatchString(s)) && !openQuestionRe.MatchString(s) && !inlineOptions(s)
}

// eitherOrNear reads "either X or Y" from the question sentence, else from the sentences after it in its
// paragraph (a request stated first, its alternatives next: "I won't apply this without your go-ahead. Please
// confirm whether to X or Y."), else from the sentence nearest before it (the question often follows the statement
// of the choice: "…needs either X or Y. Which should I use?"), else from any sentence, last first. A closed (yes/no)
// question looks no further back than itself: a sentence before it that holds an "or" is what the agent found, not
// what it offers. Last, the paragraphs after the question's: a choice announced before the agent names it.
func eitherOrNear(ss []sentence, qIdx int, closed bool) []choice {
	var order []int
	if qIdx >= 0 {
		order = append(order, qIdx)
		for k := qIdx + 1; k < len(ss) && ss[k].unit == ss[qIdx].unit; k++ {
			order = append(order, k)
		}
		for k := qIdx - 1; k >= 0 && !closed; k-- {
			order = append(order, k)
		}
		// A choice announced before its alternatives ("there are two ways to do it, with different blast radius."),
		// which the next paragraphs then name: "I can either X or Y."
		for k := qIdx + 1; k < len(ss) && !closed; k++ {
			if ss[k].unit != ss[qIdx].unit {
				order = append(order, k)
			}
		}
	} else {
		for k := len(ss) - 1; k >= 0; k-- {
			order = append(order, k)
		}
	}
	for _, k := range order {
		if opts := eitherOrOptions(ss[k].text); opts != nil {
			return opts
		}
	}
	return nil
}

// questionText builds the question from sentence qIdx: a '?' sentence with short context, or the whole unit
// (paragraph) stating an uncertainty, since "I need clarification on X" needs the X-versus-Y that follows.
func questionText(ss []sentence, qIdx int, options listBlock) string {
	const short = 60
	q := ss[qIdx]
	if !strings.HasSuffix(q.text, "?") {
		var parts []string
		for _, s := range ss {
			if s.unit == q.unit {
				parts = append(parts, s.text)
			}
		}
		return truncate(strings.Join(parts, " "), 800)
	}
	text := q.text
	if utf8.RuneCountInString(text) >= short {
		return truncate(text, 800)
	}
	// A short question ("Which way do you want to go?") leans on what precedes it: its own paragraph when it
	// has one (the last few sentences of it), else the sentence before the options it follows.
	var unit []string
	for k := qIdx - 1; k >= 0 && ss[k].unit == q.unit && len(unit) < 3; k-- {
		unit = append([]string{ss[k].text}, unit...)
	}
	if len(unit) > 0 {
		text = strings.Join(append(unit, text), " ")
	} else {
		for k := qIdx - 1; k >= 0; k-- {
			p := ss[k]
			// The options and what is said about each (a heading's paragraph, its pros and cons) are no context.
			inOptions := p.line >= options.start && p.line < options.end
			if inOptions || letteredLineRe.MatchString(p.text) || listLineRe.MatchString(p.text) || recommendRe.MatchString(p.text) ||
				markerLineRe.MatchString(p.text) || strings.HasSuffix(p.text, ":") {
				continue
			}
			text = p.text + " " + text
			break
		}
	}
	return truncate(text, 800)
}

// findOptions returns the options offered around the question on line qLine, and the block they are in: a list or
// table after the question (a paragraph between is fine, as when the agent explains the choice first), else one
// right before it, else a list offered as choices anywhere. Lists not offered as choices elsewhere are summaries, findings or
// plans, and so is any such list next to a closed (yes/no) question, or under a lead-in that names it so.
//
// pointsBack says the question picks among the list it follows ("Which of these should I fix first?"): then a list
// of findings is its choices.
func findOptions(d *doc, qLine int, closed, pointsBack bool) ([]choice, listBlock) {
	// More than maxOptions items is a list of findings or files, not a choice.
	const maxOptions = 8
	// rank: 0 after the question and near it, 1 before it and near, 2 an offered list elsewhere.
	var best []choice
	var bestBlock listBlock
	bestRank, bestDist := 3, 0
	for _, b := range listBlocks(d) {
		rank, dist := b.place(d, qLine)
		// A yes/no question takes only the choices offered next to it: a list further off is about something else,
		// and a list of findings or changes is what it asks about, keyed or not.
		notChoices := b.notChoices && (closed || !pointsBack)
		if !b.offered && (rank == 2 || closed || notChoices) || closed && (rank == 2 || notChoices) {
			continue
		}
		if rank > bestRank || rank == bestRank && dist >= bestDist {
			continue
		}
		if b.boldLead && !b.offered && (rank == 2 || closed) {
			continue // paragraphs of a report, each with its bold title, not what an open question near it asks about
		}
		if opts := b.options(d); len(opts) >= 2 && len(opts) <= maxOptions {
			best, bestBlock, bestRank, bestDist = opts, b, rank, dist
		}
	}
	return best, bestBlock
}

// listBlock is a run of prose lines that may hold options: a list, a table, options under their keys, a drawn
// selection, or one line of inline options.
type listBlock struct {
	start, end int // lines [start, end)
	// offered: the block is put as choices, by its keys ("A)", "Option 2 —", "First possibility:"), by the cursor
	// of a drawn selection, or by its lead-in ("Options:"); a numbered or bulleted list alone may be anything.
	offered bool
	// notChoices: its lead-in names it as what was done, found or planned ("Files changed:", "Summary of what I
	// found:", "Proposed approach:").
	notChoices bool
	// boldLead: paragraphs that each open with a bold name, which is its option's label; offered only by a lead-in.
	boldLead bool
	// drawn: a selection a CLI drew under its cursor, the way its prompt takes the answer.
	drawn bool
}

// options reads the block's choices: its items, or the names its paragraphs open with.
func (b listBlock) options(d *doc) []choice {
	if !b.boldLead {
		return parseOptions(strings.Join(d.proseLines[b.start:b.end], "\n"))
	}
	var out []choice
	for _, l := range d.proseLines[b.start:b.end] {
		if name := boldLeadName(l); name != "" {
			out = append(out, choice{label: name})
		}
	}
	return out
}

// listBlocks finds the lists, tables, keyed options, drawn selections and lines of inline options of d's prose,
// in order.
func listBlocks(d *doc) []listBlock {
	var blocks []listBlock
	lines := d.proseLines
	for i := 0; i < len(lines); {
		l := lines[i]
		style := listStyle(l)
		if style == styleNone {
			if inlineOptions(l) {
				blocks = append(blocks, listBlock{start: i, end: i + 1, offered: true})
			}
			i++
			continue
		}
		var j int
		switch style {
		case styleKeyed:
			j = keyedEnd(lines, i)
		case styleBoldLead:
			if j = boldLeadEnd(lines, i); j == i {
				i++ // a section's title
				continue
			}
		default:
			j = listEnd(lines, i, style)
		}
		drawn := hasCursorRow(lines[i:j])
		b := listBlock{start: i, end: j, offered: style == styleLettered || style == styleKeyed || drawn,
			boldLead: style == styleBoldLead, drawn: drawn}
		switch leadIn(lines, i) {
		case leadOffers:
			b.offered = true
		case leadNotChoices:
			b.notChoices = true
		}
		blocks = append(blocks, b)
		i = j
	}
	return blocks
}

// listEnd is where the list of style that starts at line i ends: items of its kind and their indented lines go on
// with it, and a blank line between two items of the same list does not end it.
func listEnd(lines []string, i int, style lineStyle) int {
	j := i + 1
	for j < len(lines) {
		n := lines[j]
		if s := listStyle(n); s != styleNone && s != styleKeyed && s != styleBoldLead && (s == styleTable) == (style == styleTable) ||
			style != styleTable && strings.TrimSpace(n) != "" && (n[0] == ' ' || n[0] == '\t') {
			j++
			continue
		}
		if strings.TrimSpace(n) == "" && j+1 < len(lines) && style != styleTable && listStyle(lines[j+1]) == style {
			j++
			continue
		}
		break
	}
	return j
}

// maxSection bounds what is said about one keyed option: a key further on starts another set of options.
const maxSection = 30

// keyedEnd is where the options written under their keys from line i end: each option's section runs from its
// key's line over what is said about it (its pros and cons, a paragraph) to the next key, as long as no other
// heading and no question comes between; the last section is its key's paragraph and a sub-list under it. For
// options laid out as headings or bold lead-ins ("### Option A: …", "**Option 1: …** — …", "First possibility:
// …"), whose pros and cons are often not indented.
func keyedEnd(lines []string, i int) int {
	end := sectionEnd(lines, i)
	for k := i; ; {
		next := -1
		for j := end; j < len(lines) && j < k+maxSection; j++ {
			l := lines[j]
			if keyedLineRe.MatchString(l) {
				next = j
				break
			}
			if mdHeadingRe.MatchString(l) || strings.HasSuffix(strings.TrimSpace(l), "?") {
				break
			}
		}
		if next < 0 {
			return end
		}
		k, end = next, sectionEnd(lines, next)
	}
}

// sectionEnd is the end of the last keyed option's own part from its key's line k: the lines that go on from it
// up to a blank line, then a list under it (the option's pros and cons) after blank lines.
func sectionEnd(lines []string, k int) int {
	j := k + 1
	for j < len(lines) {
		l := lines[j]
		if t := strings.TrimSpace(l); t != "" && !keyedLineRe.MatchString(l) && !strings.HasSuffix(t, "?") {
			j++
			continue
		}
		if strings.TrimSpace(l) != "" {
			break
		}
		n := j
		for n < len(lines) && strings.TrimSpace(lines[n]) == "" {
			n++
		}
		if n < len(lines) && (listStyle(lines[n]) == styleList || lines[n][0] == ' ' || lines[n][0] == '\t' ||
			underHeading(lines, k, n)) {
			j = n
			continue
		}
		break
	}
	return j
}

// underHeading reports whether line n, after blank lines, is still the section of the option keyed as a markdown
// heading on line k ("### Option 3 — Isolate the worker", then its paragraphs and its pros and cons): prose that
// is no other heading, no key and no question, within maxSection lines of the key.
func underHeading(lines []string, k, n int) bool {
	t := strings.TrimSpace(lines[n])
	return mdHeadingRe.MatchString(lines[k]) && n-k < maxSection && !mdHeadingRe.MatchString(lines[n]) &&
		!keyedLineRe.MatchString(lines[n]) && !strings.HasSuffix(t, "?")
}

// place ranks a block by where it is from the question on line qLine, and says how far: 0 after the question and
// near it (a paragraph between is fine), 1 right before it, 2 elsewhere (or there is no question line). A
// paragraph that recommends one of the options does not part them from the question: agents put their pick
// between the options and the question, or between the question and the options.
func (b listBlock) place(d *doc, qLine int) (rank, dist int) {
	switch {
	case qLine < 0:
		return 2, len(d.lines)
	case qLine < b.start:
		// A CLI's prompt shows what it asks about (the command, its reason, the diff) between its question and the
		// selection that takes the answer.
		if b.drawn || d.paragraphsBetween(qLine, b.start, 1) <= 1 {
			return 0, b.start - qLine
		}
		return 2, b.start - qLine
	case qLine >= b.end:
		if d.paragraphsBetween(b.end-1, qLine, 0) == 0 {
			return 1, qLine - b.end + 1
		}
		return 2, qLine - b.end + 1
	}
	return 0, 0 // the question is inside the block: inline options
}

type lineStyle int

const (
	styleNone lineStyle = iota
	styleLettered
	styleList // numbered or bulleted
	styleTable
	styleKeyed  // an option under its key as a heading or lead-in: "### Option A: …", "Approach 2 — …"
	styleSelect // the cursor's row of a drawn selection: "❯ 1. Yes"
	// a paragraph that opens with a bold sentence naming what it is about: "**Run it against a real Kafka.** Slower,
	// but …"; such paragraphs are options only under a lead-in that offers them ("Two paths for …:").
	styleBoldLead
)

var (
	// A line that opens an option by naming its key or its position, as a heading, a bold lead-in or a paragraph's
	// start: "### Option A: …", "## Option 2 — …", "**Option 1: …**", "Approach 1: …", "First possibility: …",
	// "**A) Name**", "### B. Name" (a heading keyed by a letter; one keyed by a number is a report's section).
	keyedLineRe = lazyRE(`^[\s#>]*(?:[*_]{0,2}(?:` + optionWordRe + `\s+(?:[A-Ha-h]|[1-9])` + keyAsideRe + `\s*[:.)\-–—]|(?i:first|second|third|fourth|fifth)\s+(?i:option|possibility|approach|alternative|choice|way)\s*[:.\-–—])|(?:\*\*|__)(?:[A-Ha-h][).:]|[1-9]\))\s)|^\s*#{1,6}\s+[*_]{0,2}[A-Ha-h][.)][*_]{0,2}\s`)
	// A markdown heading: it ends the section of a keyed option before it.
	mdHeadingRe = lazyRE(`^\s*#{1,6}\s`)
)

// listStyle says whether a prose line is an item of a lettered list, of a numbered or bulleted one, a row of a
// markdown table, an option under its key, or the cursor's row of a drawn selection.
func listStyle(l string) lineStyle {
	switch {
	case keyedLineRe.MatchString(l):
		return styleKeyed
	case letteredLineRe.MatchString(l):
		return styleLettered
	case listLineRe.MatchString(l):
		return styleList
	case tableRowRe.MatchString(l):
		return styleTable
	case cursorRowRe.MatchString(l):
		return styleSelect
	case boldLeadName(l) != "":
		return styleBoldLead
	}
	return styleNone
}

// boldLeadRe is a paragraph's opening bold sentence and what follows it on its line, or a bold line alone that
// titles the paragraph under it.
var boldLeadRe = lazyRE(`^(?:\*\*|__)([^*_\n]+?)[.:!]?(?:\*\*|__)[.:!]?(?:\s+\S|\s*$)`)

// boldLeadName is the name a paragraph opens with in bold, of two words or more, or "": "**Keep the embedded broker.**
// Cheap, but …" is named "Keep the embedded broker". A bold word alone is a label ("**Note:** …"), not a name.
func boldLeadName(l string) string {
	m := boldLeadRe.FindStringSubmatch(l)
	if m == nil {
		// A markdown heading names the paragraph under it the same way: "### Incremental via a compat root".
		m = nameHeadingRe.FindStringSubmatch(l)
	}
	if m == nil || !strings.Contains(strings.TrimSpace(m[1]), " ") {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// nameHeadingRe is a markdown heading of level 2 to 6 that names something: not a question, nor a lead-in ending in
// a colon.
var nameHeadingRe = lazyRE(`^\s*#{2,6}\s+[*_]{0,2}([^#*_\n]*[^#*_\n:?\s])[*_]{0,2}\s*$`)

// boldLeadEnd is where the paragraphs that open with a bold name from line i end: each runs to a blank line or a
// list, and the next one must follow after blank lines alone. It returns i when line i opens no such paragraph: a
// bold title alone over a list or nothing is a section's title ("**Open question**"), not a named paragraph.
func boldLeadEnd(lines []string, i int) int {
	if !boldParagraph(lines, i) {
		return i
	}
	end := paragraphEnd(lines, i)
	for {
		next := -1
		for j := end; j < len(lines) && j < end+maxSection; j++ {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if listStyle(lines[j]) == styleBoldLead && boldParagraph(lines, j) {
				next = j
			}
			break
		}
		if next < 0 {
			return end
		}
		end = paragraphEnd(lines, next)
	}
}

// boldParagraph reports whether line i, which opens with a bold name, has prose of its own after the name: on its
// line, or on the paragraph's next line.
func boldParagraph(lines []string, i int) bool {
	if m := boldLeadRe.FindStringSubmatchIndex(lines[i]); m != nil && strings.TrimSpace(lines[i][m[1]-1:]) != "" {
		return true // text after the name on its line (the match ends at its first character)
	}
	return paragraphEnd(lines, i) > i+1
}

// paragraphEnd is the first line after line i that is blank or a list's, or the end.
func paragraphEnd(lines []string, i int) int {
	j := i + 1
	for j < len(lines) && strings.TrimSpace(lines[j]) != "" && listStyle(lines[j]) == styleNone {
		j++
	}
	return j
}

type leadKind int

const (
	leadNone leadKind = iota
	leadOffers
	leadNotChoices
)

var (
	// A lead-in that offers the list under it as choices: "Options:", "## Alternatives", "I can fix it in one of
	// two ways:", "Possible fixes:", "two places the check could go:", or that asks about it ("Which files should I
	// delete:"). For a list put as choices apart from the question ("Options:" with the question above it and a
	// recommendation between).
	leadOffersRe = lazyRE(`(?i)\b(?:your call|a call|options|choices?|alternatives|approaches|possibilities|ways|paths|fixes|solutions|candidates|one of|either|decide|decision|choose|pick|could|might|which|should (?:I|we)|shall (?:I|we)|would you|do you|want me to|prefer)\b`)
	// A lead-in that names the list under it as work done, things found or a plan: "Files changed:", "Summary
	// of what I found:", "Proposed approach:". For lists that sit near a question without being its choices.
	leadClauseBreakRe = lazyRE(`(?i)[,;]?\s+(?:but|however|though|although|yet)\b|;`)
	leadNotChoicesRe  = lazyRE(`(?i)\b(?:summary|findings?|changes|changed|files?|did|done|steps?|plan|proposed|modified|updated|added|fixed|removed|notes?|results?|verified|tested|checked|failures|errors|issues|problems|bugs|warnings|risks|todo|next (?:steps?|up|actions?)|what's next|up next)\b|^\W*next\b`)
)

// leadIn says what the line introducing the block at line i (the nearest line above it, blank lines skipped)
// calls it, when that line is a lead-in: a heading, a label, or a line ending in a colon.
func leadIn(lines []string, i int) leadKind {
	k := i - 1
	for k >= 0 && strings.TrimSpace(lines[k]) == "" {
		k--
	}
	if k < 0 || i-k > 3 {
		return leadNone
	}
	l := strings.TrimSpace(lines[k])
	bare := strings.TrimRight(l, "*_ ")
	heading := mdHeadingRe.MatchString(l)
	if !heading && !strings.HasSuffix(bare, ":") {
		return leadNone
	}
	if !heading {
		l = wrappedSentence(lines, k)
		// The clause that introduces the list is the last: in "The export is done, but two imports still expect the
		// column:", what was done is before "but".
		if locs := leadClauseBreakRe.FindAllStringIndex(l, -1); len(locs) > 0 {
			l = l[locs[len(locs)-1][1]:]
		}
	}
	switch {
	case leadOffersRe.MatchString(l):
		return leadOffers
	case leadNotChoicesRe.MatchString(l):
		return leadNotChoices
	}
	return leadNone
}

// wrappedSentence is the sentence that ends on line k, with the lines of its paragraph it was wrapped from: "… while 20
// and 22 pass. Two ways" and "to fix it:" make "Two ways to fix it:".
func wrappedSentence(lines []string, k int) string {
	s := strings.TrimSpace(lines[k])
	for j := k - 1; j >= 0 && j > k-4; j-- {
		prev := strings.TrimSpace(lines[j])
		if prev == "" || strings.ContainsAny(prev[len(prev)-1:], ".!?:") || listLineRe.MatchString(lines[j]) ||
			mdHeadingRe.MatchString(lines[j]) {
			break // the sentence starts on the line after
		}
		s = prev + " " + s
	}
	if locs := sentenceEndInLineRe.FindAllStringIndex(s, -1); len(locs) > 0 {
		s = s[locs[len(locs)-1][0]+1:]
	}
	return strings.TrimSpace(s)
}

// paragraphsBetween counts the paragraphs (runs of non-blank lines) strictly between lines from and to that
// touch neither: the text separating a question from a list. A paragraph that recommends (see place) is not
// counted. Counting stops past limit: what matters is whether there are more.
func (d *doc) paragraphsBetween(from, to, limit int) int {
	n := 0
	for i := from + 1; i < to && n <= limit; i++ {
		if strings.TrimSpace(d.lines[i]) == "" {
			continue
		}
		start := i
		for i < to && strings.TrimSpace(d.lines[i]) != "" {
			i++
		}
		if start > from+1 && i < to && recommendedPhrase(strings.Join(d.proseLines[start:i], " ")) == "" {
			n++
		}
	}
	return n
}
