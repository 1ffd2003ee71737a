package brain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// decide.go chooses between another attempt and a human for a failed task, following the decide prompt:
// escalate what no retry can fix and what keeps failing the same way (or see-saws between two errors);
// retry anything else, telling the agent what to do differently.

// minLoopRun is how many similar errors in a row make a loop: the seed's "same or very similar error 3+
// times". Two repeats still get one more attempt with different guidance.
const minLoopRun = 3

// errEmptyHistory: with no failed attempt there is nothing to judge, and retrying blind would hide a caller bug.
var errEmptyHistory = errors.New("deciding retry: attempt history is empty")

// permanentRule is one kind of error no retry can fix.
type permanentRule struct {
	re  *pattern
	why string
	// notInTest: the words also name what a test expects ("want AccessDenied"), where they are the code under test
	// misbehaving, which a retry can fix.
	notInTest bool
}

// permanentCauses are the kinds of error no retry can fix, built on first use: their patterns' sources are long, and
// most processes never decide.
var permanentCauses = sync.OnceValue(func() []permanentRule {
	return []permanentRule{
		// Secret scanners refusing a push (GitHub push protection, GitLab secret detection, gitleaks in a hook): the
		// secret is in a commit already, so it must be revoked by its owner and the history cleaned by a person who
		// decides how; another attempt could only bypass the scanner or rewrite history, which it must not.
		{secretScanRe,
			"a secret scanner blocking the push: the secret's owner must revoke it and a person must decide how to clean the history (no attempt may rewrite history or bypass the scanner)", false},
		// A billing quota or credit used up (OpenAI's insufficient_quota, Anthropic's credit balance, a cloud project
		// without billing): the key works, the account cannot pay. Told apart from missing credentials, which it is not.
		{lazyRE(oneOf(`(?i)`,
			`\bcredit balance is too low\b`,
			`\binsufficient_quota\b`,
			`\b(?:out of|no remaining|insufficient|not enough) (?:credits?|funds|balance)\b`,
			`\bpurchase (?:more )?credits\b`,
			`\bcheck your plan and billing\b`,
			`\bbilling (?:account|details|information|profile)\b[^.\n]{0,60}\b(?:not found|disabled|closed|suspended|required|must be enabled|is not enabled|not active)\b`,
			`\bbilling must be enabled\b`,
			// Billing switched off for a project, however the provider puts it ("requires billing to be enabled", "enable
			// billing on project", "billing is disabled"): a person with the billing account must turn it on.
			`\b(?:requires?|needs?) billing (?:to be )?(?:enabled|activated|turned on)\b`,
			`\benable billing (?:on|for|in)\b`,
			`\bbilling (?:is |has been )?(?:not enabled|disabled|not (?:set up|configured|active))\b`,
			`\bpayment required\b`,
		)),
			"a billing quota or credit that is used up: only a person can pay for more or raise the limit", false},
		{lazyRE(`(?i)\bpermission denied\b|\bpermission to \S+ denied\b|\bEACCES\b|\bEPERM\b|\boperation not permitted\b|\baccess (?:is )?denied\b`),
			"a permission problem the agent cannot grant itself", false},
		{lazyRE(`(?i)\bno space left on device\b|\bdisk quota exceeded\b|\bread-only file ?system\b`),
			"a machine problem (full or read-only disk) the agent cannot fix from inside", false},
		{lazyRE(oneOf(`(?i)`,
			`\b(?:missing|invalid|expired|revoked|bad|incorrect|no)\s+(?:api[ _-]?key|credentials?|(?:auth(?:entication)?|access|bearer|oauth|api|github|gitlab|npm|personal access) token|password)\b`,
			`\b(?:api[ _-]?key|credentials?|(?:auth(?:entication)?|access|bearer|oauth|api) token)\s+(?:is\s+|are\s+|was\s+)?(?:missing|not set|not found|invalid|expired|not configured|required|unset|empty)\b`,
			`(?-i:\b[A-Z][A-Z0-9_]*(?:API_KEY|TOKEN|SECRET|PASSWORD)\b)\s+(?:is\s+)?(?:not set|missing|unset|empty|required)`,
			`\bnot logged in\b`,
			`\bplease (?:log|sign) in\b`,
			`\blogin required\b`,
			`\bauthentication (?:failed|required|error)\b`,
			`\bauthentication_(?:error|failed)\b`,
			`\bno\s*(?:valid\s*)?credential`,
			`\b(?:unable to locate|could not (?:find|load|locate)|couldn't (?:find|load|locate)|cannot (?:find|load|locate)|can't (?:find|load|locate)|failed to (?:find|load|locate|retrieve|get))\s+(?:any\s+|default\s+|valid\s+|the\s+)*credentials\b`,
			`\bcould not read Username\b`,
			`\bunable to authenticate\b`,
			`\bcode E40[13]\b`,
		)),
			"missing or invalid credentials only a human can provide", false},
		// A credential that was valid and no longer is: a token, key, session or certificate that has expired or been
		// revoked (AWS's ExpiredToken, "the refresh token has expired", "your session has expired, log in again"). Only its
		// owner can issue a new one. The same words in a test of the code's own token handling are that code misbehaving.
		{lazyRE(oneOf(`(?i)`,
			`(?-i:\bExpiredToken(?:Exception)?\b|\bTokenExpired\b|\bInvalidClientTokenId\b|\bInvalidAccessKeyId\b|\bUnrecognizedClientException\b|\bCSSMERR_TP_CERT_EXPIRED\b)`,
			// A certificate named by its full name before "expired on": "Certificate 'Apple Distribution: Acme Labs Ltd
			// (7QX3ZK9A2B)' expired on 2024-04-09".
			`\b(?:certificate|cert)\s+(?:'[^'\n]{1,120}'|"[^"\n]{1,120}")\s+(?:has\s+)?expired\b`,
			`\b(?:security |session |access |auth |api |bearer )?(?:token|credentials?|access key|api key)\b[^.\n]{0,40}?\b(?:is|are|was|were) (?:invalid|not valid|deactivated|disabled)\b`,
			`\b(?:token|credentials?|password|certificate|cert|key|grant)\b[^.\n]{0,30}?\b(?:has|have|had) (?:expired|been revoked)\b`,
			`\b(?:token|credentials?|session|password|certificate|key|grant)s? (?:is|are|was|were) (?:expired|revoked)\b`,
			`\b(?:token|credentials?|session|password|certificate|cert|key)\b[^.\n]{0,40}?\bexpired (?:at|on)\b`,
			`\b(?:expired|revoked) (?:security |session |refresh |access |auth |sso )?(?:token|credentials?|session|certificate|key)\b`,
			// A login that must be renewed by its owner: "Reauthentication failed. cannot prompt during non-interactive
			// execution" (gcloud), "Your credentials are no longer valid" (firebase), "re-authentication required".
			`\bre-?authenticat(?:ion|e)\b[^.\n]{0,30}?\b(?:failed|required|needed)\b`,
			`\b(?:credentials?|login|session|token)s? (?:is |are )?no longer valid\b`,
			`\bcannot prompt\b[^.\n]{0,30}?\bnon-?interactive\b`,
		)),
			"a credential that expired or was revoked: only its owner can issue a new one", true},
		// SDKs and CLIs word a missing key or login in their own ways: "the api_key client option must be set",
		// "could not resolve authentication method", "invalid x-api-key", "please run: gh auth login", "set the GH_TOKEN
		// environment variable", "Application Default Credentials … not found".
		{lazyRE(oneOf(`(?i)`,
			`\b(?:api[ _-]?key|access[ _-]?key|token|credentials?|secret)\b[^.\n]{0,40}?\b(?:must be (?:set|provided|specified)|(?:is|are) required|(?:was|were) not (?:provided|found|set))\b`,
			`\b(?:could not|couldn't|unable to|failed to|cannot) (?:resolve|find|determine|load|obtain) (?:an? |the |any )?(?:valid )?(?:authentication|auth) (?:method|credentials?|token|headers?)\b`,
			`\binvalid[ _-]x-api-key\b`,
			`\bx-api-key\b[^.\n]{0,20}\b(?:invalid|missing)\b`,
			`\b(?:please |then )?run:?\s+(?:\$\s+)?\S+ (?:auth )?login\b`,
			`\bset the [A-Z][A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSWORD|CREDENTIALS)\b environment variable`,
			// An organisation that enforces single sign-on: a token works only once its owner authorises it through the
			// organisation's SSO login ("Resource protected by organization SAML enforcement", "re-authorize … SSO").
			`\bSAML (?:SSO |single sign-on )?enforce(?:ment|d)\b|\b(?:enabled or )?enforced SAML\b`,
			`\b(?:grant|authori[sz]e) (?:your |the )?(?:OAuth |personal access |access |API )?(?:token|key|credentials?) (?:access )?(?:to|for) (?:this|the|that) organi[sz]ation\b`,
			`\b(?:SSO|single sign-on)\b[^.\n]{0,40}?\b(?:authori[sz]ation (?:is )?required|must (?:be )?authori[sz]ed?|re-?authori[sz]e)\b`,
			`\bdefault credentials\b[^.\n]{0,40}\bnot (?:found|set|available)`,
			`\bapplication default credentials\b[^.\n]{0,60}\b(?:not|no|missing|unable|could not)\b`,
		)),
			"missing or invalid credentials only a human can provide", false},
		// A usage or spending limit that lifts at a stated time, or a quota used up: retrying before then fails the
		// same way and burns what is left. A limit that says to try again in seconds is transient and stays a retry.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:usage|session|weekly|daily|monthly|hourly|\d+-hour|five-hour|spending|billing)\s+limit\s+(?:reached|exceeded|hit)\b`,
			`\b(?:hit|reached|exceeded) (?:your|the) (?:[\w-]+ )?limit\b`,
			`\b(?:hit|reached|exceeded|exhausted) (?:your|the) (?:\w+ )?(?:limit|quota)\b[^.\n]{0,60}\breset`,
			`\bquota\b[^.\n]{0,80}?\b(?:exceeded|exhausted|used up|reached)\b`,
			`\bexceeded (?:your|the) (?:current |monthly |daily )?quota\b`,
			`\b(?:limit|quota)\b[^.\n]{0,60}?\bresets?\s+(?:at|on|in \d+\s*(?:hours?|days?|h|d)\b|mon|tue|wed|thu|fri|sat|sun|tomorrow|\d)`,
			`\b(?:try again|retry) (?:in \d+\s*(?:hours?|days?|weeks?)\b|(?:at|on|after) (?:\d|mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|tomorrow|midnight))`,
			// A limit named by what it caps (usage, spend, a budget, a plan), with words between ("your specified
			// workspace API usage limits"); a rate limit is not among them: it lifts in seconds.
			`\b(?:hit|reached|exceeded) (?:your|the) (?:[\w-]+ ){0,3}?(?:usage|spend(?:ing)?|billing|budget|credit|plan|monthly|daily|weekly) limits?\b`,
			// Access that comes back at a stated date, however it is said.
			`\b(?:regain access|access (?:will be|is) restored|(?:will be )?available again|(?:limits?|quota) (?:will )?reset)\s+(?:on|at|after)\s+(?:\d|mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|tomorrow|midnight)`,
		)),
			usageLimitWhy, false},
		// A tool that refuses to run as root (or under sudo) is refusing this environment, not the agent's change.
		{lazyRE(`(?i)\b(?:cannot|can't|must not|may not|should not|is not allowed to|refuses? to)\s+(?:be\s+)?(?:used|run|started|executed)\b[^.\n]{0,40}?\b(?:as|with|under|by) (?:the )?(?:root|sudo|superuser)\b|\broot/sudo privileges\b`),
			"a tool that refuses to run in this environment (as root)", false},
		// An account's limit on a kind of resource, which only a person can have raised ("VpcLimitExceeded: The maximum
		// number of VPCs has been reached", "a Service Quotas increase request is required").
		{lazyRE(oneOf(`(?i)`,
			`(?-i:\b[A-Z][A-Za-z]*LimitExceeded\b)`,
			`\bmaximum number of [\w -]{1,40}? (?:has|have) been reached\b`,
			`\bquota increase (?:request )?(?:is )?(?:required|needed)\b`,
			`\brequest (?:a|an) (?:quota|limit) increase\b`,
		)),
			"an account limit on a kind of resource, which only a person can have raised", false},
		// A version of a dependency that has not been published: its owners must release it, or a person must change
		// what the task asks for ("No matching version found for @acme/tokens@^4.0.0 … '4.0.0 planned for Q3'").
		{lazyRE(`(?is)\b(?:no matching version found|notarget|could not find a version that satisfies|no versions? match(?:ing|es)?)\b.{0,240}?\b(?:planned for|not (?:yet )?(?:released|published)|unreleased|upcoming release|has not been (?:released|published))\b`),
			"a version of a dependency that has not been published: its owners must release it, or a person must change the requirement", false},
		// A cloud identity without the right (AWS IAM "AccessDenied … is not authorized to perform", Azure RBAC
		// "AuthorizationFailed … does not have authorization to perform action", gcloud "PERMISSION_DENIED",
		// "Permission 'x' denied"): only someone who administers the account can grant it.
		{lazyRE(oneOf(`(?i)`,
			`(?-i:\bAccessDenied(?:Exception)?\b)`,
			`\bnot authori[sz]ed (?:to (?:perform|access|read|write|execute|use)|on \S+ to (?:execute|perform|access))\b`,
			// What a look at the grants finds: "User:recon-svc has no READ grant", "the user has no permission on the
			// billing vhost".
			`\bhas no (?:\w+ )?(?:grants?|permissions?|access|ACLs?|role)\b(?: (?:on|to|for)\b)?`,
			// A key or identity without a permission the call needs: "The provided key … does not have the required
			// permissions for this endpoint" (Stripe's restricted keys).
			`\bdoes not have the required permissions?\b`,
			// Kafka's ACL refusals: "TopicAuthorizationException: Not authorized to access topics: [x]".
			`(?-i:\b(?:Topic|Group|Cluster|TransactionalId|DelegationToken)AuthorizationException\b)`,
			`\bdoes not have (?:authorization|permission) to (?:perform|access)\b`,
			`(?-i:\bAuthorizationFailed\b|\bPERMISSION_DENIED\b|\bUnauthorizedOperation\b)`,
			`\bpermission ['"][\w.]+['"] denied\b`,
			`\binsufficient (?:permissions|privileges|scopes?)\b`,
		)),
			"an authorization the agent's cloud identity lacks (IAM, RBAC): only an administrator can grant it", true},
		// A repository, bucket, project or other account-level resource that does not exist, or that the agent cannot see:
		// creating it or correcting its name is a person's call. Files, modules and cluster objects are not here: the
		// agent can create or correct those.
		{lazyRE(oneOf(`(?i)`,
			`\brepository (?:\S+ )?not found\b`,
			`\b(?:repository|repo|bucket|organi[sz]ation|subscription|resource group|container registry)\s+(?:['"\x60]?[\w./@:-]+['"\x60]?\s+)?(?:does not exist|doesn't exist|could not be found|was not found|is not found)\b`,
			`\brepository does not exist\b`,
			`(?-i:\bNoSuchBucket\b|\bResourceGroupNotFound\b|\bRepositoryNotFoundException\b|\bSubscriptionNotFound\b)`,
			`\bthe specified bucket does not exist\b`,
			// GitHub's GraphQL API on a name it cannot see: "Could not resolve to a Repository with the name 'acme/x'".
			`(?-i:\bCould not resolve to an? (?:Repository|Organization|User|ProjectV2|Project|PullRequest|Issue)\b)`,
		)),
			"a repository or resource that does not exist, or that the agent cannot see: a person must create it or correct the name", false},
		// A security or organisational policy the task runs into (a policy document, an admission controller, an
		// organisation constraint, branch protection): changing the policy, or the task, is a person's decision.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:violates?|violation of|conflicts? with|not allowed by|forbidden by|blocked by|denied by|prohibited by)\s+(?:the |our |an? |this |your )?(?:\w+ ){0,2}?(?:security|organi[sz]ation(?:al)?|org|compliance|company|data|branch protection|admission|repository) (?:policy|policies|rules?|ruleset|constraints?)\b`,
			`\bpolicy (?:violation|forbids|prohibits|does not allow|disallows)\b`,
			// A policy named by its name rather than its kind ("Denied by policy "Acme On-Prem Distribution""), and
			// what an organisation or enterprise does not allow ("The actions x/y@v3 are not allowed in acme/api").
			`\b(?:denied|blocked|rejected|refused|forbidden) by (?:the )?polic(?:y|ies)\b`,
			`\b(?:is|are) not allowed (?:in|for|by) (?:this |the |your )?(?:[\w.-]+/[\w.-]+|organi[sz]ation|enterprise|account)\b`,
			// A tool refusing the change per a policy ("rejects per company policy", "blocked under the organization's
			// security policy"), and a licence policy refusing a dependency (cargo-deny's "failed to satisfy license
			// requirements", a licence checker's "not allowed by license policy").
			`\b(?:rejects?|rejected|refuses?|refused|blocks?|blocked|forbids?|disallows?|denies|denied|fails?|failed|not allowed)\b[^.;\n]{0,60}?\b(?:per|by|under|according to) (?:the |our |an? |this |your )?(?:\w+'s )?(?:\w+ ){0,2}?(?:security|organi[sz]ation(?:al)?|org|compliance|company|corporate|legal|licen[cs](?:e|ing)) polic(?:y|ies)\b`,
			`\bfailed to satisfy licen[cs]e requirements\b`,
			`\blicen[cs](?:e|ing) polic(?:y|ies)\b[^.;\n]{0,40}?\b(?:rejects?|rejected|forbids?|disallows?|denies|denied|not allowed|violat\w*)\b`,
			`\b(?:rejects?|rejected|forbids?|disallows?|denied|not allowed|violat\w*)\b[^.;\n]{0,30}?\blicen[cs](?:e|ing) polic(?:y|ies)\b`,
			`\badmission webhook\b[^\n]{0,80}\bdenied the request\b`,
			`(?-i:\bRequestDisallowedByPolicy\b)`,
			`\bconstraints/[\w.]+\b[^\n]{0,60}\bviolated\b`,
			`\bviolates? (?:the )?(?:org(?:ani[sz]ation)? policy )?constraint\b`,
			`\bprotected branch\b[^\n]{0,60}\b(?:failed|rejected|declined|not allowed)\b`,
			`\bGH006\b`,
			// GitHub's CLI: "Pull request #77 is not mergeable: the base branch policy prohibits the merge".
			`\bbase branch policy prohibits the merge\b`,
			// A branch that takes changes only through a reviewed pull or merge request, as a host words its branch
			// protection ("Changes must be made through a pull request", "can only be modified through pull requests",
			// "You are not allowed to push code to protected branches"): going around the review is not the agent's call.
			`\bchanges must be made through a (?:pull|merge) request\b`,
			`\b(?:can|may) only be (?:modified|changed|updated|pushed(?: to)?|merged(?: into)?)\b[^.\n]{0,40}?\b(?:through|via|by|with) (?:an? )?(?:reviewed )?(?:pull|merge) requests?\b`,
			`\bnot allowed to (?:force[- ])?push\b[^.\n]{0,40}?\bprotected branch`,
			// A policy that names itself as violated ("Scan result policy "Block critical CVEs" violated", "policy
			// 'require-limits' violated").
			`\bpolic(?:y|ies)\b(?:\s+(?:"[^"\n]{1,80}"|'[^'\n]{1,80}'))?\s+(?:was |were |has been |is )?violated\b`,
		)),
			policyWhy, true},
		// A requirement nothing can meet any more, as the agent found it: "nothing will ever report security/snyk".
		{lazyRE(`(?i)\bnothing (?:will )?(?:ever )?(?:reports?|sends?|sets?) (?:it|that|this|the|[\w./-]+/[\w./-]+)\b|\b(?:will|can) never (?:be )?(?:report(?:ed)?|arrive|pass|be satisfied|be met|succeed|work|fill|filled)\b`),
			"a requirement nothing can meet any more (a check no app reports, a condition that never comes): only a person can change it", false},
		// Code signing (xcodebuild, fastlane match, gradle's keystore): certificates, provisioning profiles and keys live in
		// an account and a keychain the agent has no access to.
		{lazyRE(oneOf(`(?i)`,
			`\bno (?:\S+ )?signing certificate\b`,
			`\bsigned with (?:the wrong|a different) (?:key|certificate)\b|\bupload (?:key|certificate)\b[^.\n]{0,40}?\b(?:wrong|does not match|doesn't match|not registered)\b`,
			`\bsigning certificate\b[^\n]{0,60}\b(?:not found|was not found|missing|expired|revoked)\b`,
			`\bno (?:matching )?(?:provisioning )?profiles? (?:for \S+ )?(?:were |was )?(?:found|matching)\b`,
			`\bprovisioning profiles?\b[^\n]{0,60}\b(?:not found|missing|expired|required|doesn't include|does not include)\b`,
			`\bcouldn't find any [^\n]{0,40}provisioning profiles?\b`,
			`\b(?:could not|couldn't|unable to) find a (?:matching |valid )?code ?signing identity\b`,
			`\bno (?:valid |matching )?(?:code ?signing|signing) identit(?:y|ies)\b`,
			`\berrSecInternalComponent\b`,
			`\bkeystore\b[^\n]{0,40}\b(?:not found|was tampered|password was incorrect)\b`,
		)),
			"a signing certificate or provisioning profile missing from this machine: only a person with the account can install it", false},
		// A lock another person or machine holds (terraform's state lock "Who: x@host", Liquibase's "locked by host since
		// …"): breaking it could destroy their work. A lock a local process holds for a moment (apt, dpkg) is not here.
		{lazyRE(oneOf(`(?is)`,
			`\b(?:error acquiring|could not acquire|couldn't acquire|failed to acquire|unable to acquire)\b[^\n]{0,40}\block\b.{0,600}?\bwho:\s*[\w.-]+@[\w.-]+`,
			`\block\b[^\n]{0,80}\b(?:currently )?(?:locked|held|owned) by (?:user )?[a-z][\w.@-]*(?: \([^)]*\))? since\b`,
			`\block (?:is )?(?:held|owned) by (?:user )?[\w.-]+@[\w.-]+`,
			// A lock whose holder is named as a person at a machine, in the lines the tool prints about it ("locked by 1
			// lock(s) … created by x@laptop-17 (pid 48211)", "lock acquired by x@host").
			`\block(?:s|\(s\)| files?)?\b.{0,400}?\b(?:created|acquired|taken|held|owned) by (?:user )?[\w.-]+@[\w.-]+`,
		)),
			lockHeldWhy, false},
		{lazyRE(oneOf(`(?i)`,
			`\bconflicts? with (?:the |our |an? )?(?:existing )?(?:architecture|design)\b`,
			`\b(?:architecture|architectural|design) (?:issue|problem|conflict|flaw|question|decision)\b`,
			`\b(?:requires?|needs?|without|pending) (?:a |an )?(?:design|architectural|architecture|product|business|legal|compliance)(?:/(?:design|product|business|legal|compliance|security))? (?:decision|change|review|call)\b`,
			// What the failure comes down to, named as a decision that is not the code's: "whether X is right is a
			// business/policy decision", "that's a product call".
			`\b(?:is|it's|that's|remains) (?:a |an )?(?:[\w-]+/)?(?:product|business|design|legal|compliance|pricing|policy|UX|finance|financial|accounting|commercial|security) (?:decision|call|question)\b`,
			`\bbreaking change\b[^.]{0,80}\b(?:public|other teams?|clients?|consumers?|downstream)\b`,
			`\b(?:public|exported) API\b[^.]{0,80}\bbreaking change\b`,
		)),
			"a design or architecture question rather than a coding bug", false},
		{lazyRE(oneOf(`(?i)`,
			`\bcontradict(?:ory|s|ions?|ing)?\b`,
			`\bmutually exclusive\b`,
			`\bconflicting requirements\b`,
			`\bspec(?:ification)?s? conflict\b`,
			`\b(?:both|all) (?:are|were) marked (?:as )?authoritative\b`,
			`\brequirements (?:conflict|are inconsistent|are incompatible)\b`,
			`\b(?:cannot|can't|impossible to) (?:satisfy|meet) (?:both|the acceptance criteria|all (?:the |of the )?(?:acceptance )?criteria)\b`,
			`\bimpossible (?:requirement|task|to satisfy)\b`,
			// No value of the thing asked for meets both: "No retention value satisfies both", "there is no timeout that
			// meets both tickets".
			`\bno (?:single )?(?:\w+ )?(?:value|setting|option|number|timeout|limit|config(?:uration)?|version|choice|implementation|solution|approach|fix|code)\b[^.\n]{0,30}?\b(?:satisf(?:y|ies)|meets?|fits?|works? for|pass(?:es)?) both\b`,
			`\bnot possible to satisfy\b`,
			// Two requirements that exclude each other, told by what happens: "making either pass makes the other fail",
			// "fixing one breaks the other", "they cannot both hold".
			`\b(?:making|fixing|satisfying|passing|meeting|implementing) (?:either|one)\b[^.;]{0,40}?\b(?:makes|breaks|fails|violates) the other\b`,
			`\b(?:either|each) (?:one )?(?:breaks|fails|violates) the other\b`,
			`\b(?:cannot|can't|can not) both (?:pass|hold|be (?:met|satisfied|true|honou?red|kept))\b`,
			// "PRD v3 states the rule one way in §2.1 and the other way in §5.4"; "switching makes that scenario fail
			// instead".
			`\b(?:states?|says?|describes?|defines?|specifies|puts)\b[^.;]{0,80}?\bone way\b[^.;]{0,60}?\b(?:the other|another|the opposite) way\b`,
			`\b(?:makes?|causes?|leaves?) (?:that|the other|this|the first|the second) (?:one|scenario|test|case|spec|example|requirement|check)s? (?:to )?fail instead\b`,
			// One source of the task says one thing and another says otherwise: "spec section 4.2 says promo codes never
			// stack, but acceptance test AT-17 in the same ticket expects both". A unit test that disagrees with the spec
			// is not here: the agent updates the test.
			`\b(?:spec(?:ification)?|ticket|task|requirements?|design(?: doc)?|ADR|RFC|story|acceptance (?:criteria|tests?))\b[^.;]{0,40}?\b(?:says|states|requires|specifies|asks for|mandates)\b[^;]{0,200}?\bbut\b[^;]{0,80}?\b(?:spec(?:ification)?|ticket|requirements?|design(?: doc)?|ADR|RFC|story|acceptance (?:criteria|tests?)|product (?:owner|manager))\b[^;]{0,60}?\b(?:expects|says|states|requires|specifies|asks for|mandates)\b`,
		)),
			"requirements that contradict each other", false},
		{lazyRE(oneOf(`(?i)`,
			`\b(?:I|we)\s+need\s+(?:some\s+|more\s+)?(?:clarification|your input|a (?:human )?decision|human input|guidance|direction)\b`,
			`\bneeds? (?:clarification|a human|human (?:input|decision|review|intervention))\b`,
			`\b(?:cannot|can't|unable to) (?:proceed|continue|implement (?:it|this|that|them)?|finish (?:it|this|that)|complete (?:it|this|that|the task)) ?without\b`,
			`\bwaiting for (?:a |your |human )?(?:decision|input|clarification|answer)\b`,
			`\b(?:requires?|needs?) (?:a )?(?:human|manual) (?:decision|input|intervention|review)\b`,
			`\bblocked (?:until|on|by) (?:a |the |your )?(?:decision|human|clarification|product)\b`,
			`\b(?:task|requirement|spec(?:ification)?) is (?:ambiguous|unclear)\b`,
			`\bneed (?:a human|someone|somebody|a person|you|an? (?:owner|admin|maintainer|reviewer)) to (?:decide|choose|pick|confirm|approve|clarify|make (?:the|this|that|a) (?:call|decision))\b`,
			`\b(?:I'm|I am|we're|we are)\s+(?:a bit\s+|still\s+|quite\s+)?confused\b`,
			// The agent cannot choose between readings of the task: "I can't tell which one is wanted", "I need to know
			// which one wins".
			`\b(?:I|we) (?:can't|cannot|can not|couldn't|could not) (?:tell|decide|work out) (?:which|what)\b[^.;]{0,80}?\b(?:is|are|was|were) (?:wanted|meant|intended)\b`,
			`\b(?:I|we) need to know which (?:one|of (?:the|these|them)|reading|requirement)\b[^.;]{0,40}?\b(?:wins|applies|is (?:wanted|meant|intended))\b`,
			// What the task leaves open, that only a person can settle: "whether to round, reject, or change the
			// column type is not covered by the spec".
			`\b(?:is|are) not (?:covered|specified|defined|addressed|decided|answered) (?:by|in) the (?:spec(?:ification)?|ticket|task|docs?|requirements?|design)\b`,
			`\b(?:I|we) (?:don't|do not) (?:understand|know) what\b[^.;]{0,60}?\b(?:means?|should (?:produce|return|do|be|contain)|is (?:expected|wanted|meant|required))\b`,
		)),
			"the agent asking for a human decision", false},
		{lazyRE(oneOf(`(?i)`,
			`\b(?:sandbox|firewall|proxy|network policy|egress policy|corporate network)\b[^.;]{0,40}\b(?:blocks?|blocked|forbids?|denies|denied|does not allow|doesn't allow|prevents?|disallows?)\b`,
			`\bnothing (?:I|we|the agent) can (?:change|do|fix)\b`,
			// The sandbox runs without a network: "network access is disabled in this sandbox", Codex's
			// "network_access=false", "outbound network is disabled for this environment".
			`\b(?:network(?: access)?|internet(?: access)?|outbound (?:network|traffic|connections?)|egress)\s+(?:is\s+|are\s+)?(?:disabled|not allowed|not available|unavailable|blocked|turned off)\b[^.;\n]{0,20}?\b(?:in|inside|for|by)\s+(?:this|the)\s+(?:sandbox|container|environment|runner)\b`,
			`\bnetwork_access\s*=\s*false\b`,
			`\bsandbox\b[^.\n]{0,40}?\bnetwork(?: access)?\s+(?:is\s+)?(?:disabled|off|blocked|denied|not allowed)\b`,
			`\bno (?:network|internet) access\b[^.;\n]{0,20}?\b(?:in|inside) (?:this|the) (?:sandbox|container|environment)\b`,
			// Hardware the task needs and the machine has not: "no debug probe is attached to the machine", "Couldn't
			// find any ST-Link devices", "no GPU available in this runner".
			`\bno (?:debug )?(?:probe|device|hardware|board|GPU|usb device|serial port)s? (?:is |are )?(?:attached|connected|present|available|detected)\b`,
			`\b(?:couldn't|could not|can't|cannot|unable to) find any [\w-]+ (?:devices?|probes?|boards?|GPUs?)\b`,
			`\b(?:outside|beyond) (?:my|our|the agent's) control\b`,
		)),
			"a restriction of the environment the agent cannot lift", false},
		// A platform the task needs and this machine is not: a tool that exists only on another operating system
		// (Xcode's, Apple's signing and notarization tools, Windows' signtool) missing here, or a host of another
		// platform the project has not configured ("no macOS host configured", "no Windows runner available"). Only a
		// person can provide one.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:xcodebuild|xcrun|xcode-select|codesign|notarytool|productbuild|pkgbuild|altool|signtool(?:\.exe)?)\b:?[^\n]{0,12}?\b(?:command not found|not found|is not recognized|no such file or directory)\b`,
			`\bno (?:macOS|mac|darwin|Windows|arm64|aarch64|ARM|Apple Silicon|GPU|CUDA)(?:[ -][\w.]+)? (?:host|runner|machine|builder|node|agent|worker|VM)s?\b[^.;\n]{0,30}?\b(?:configured|available|attached|registered|set up|provisioned|exists?|here|for)\b`,
			`\b(?:requires?|needs?|only (?:runs|works|builds) on)\s+(?:an? )?(?:macOS|mac ?OS X|Windows|darwin|Xcode)\b[^.;\n]{0,60}?\b(?:this|the) (?:runner|machine|host|container|sandbox|environment|worker) (?:is|runs)\b`,
		)),
			"a platform the task needs that this machine is not (another operating system or host): only a person can provide one", true},
		// Hardware that cannot run what the task asks: "FlashAttention 2 requires an Ampere GPU", "bf16 is not supported on
		// this GPU". Another machine, or another recipe, is a person's choice.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:requires?|needs?|only (?:supports?|supported on|available on|runs on))\b[^.\n]{0,40}?\b(?:Ampere|Hopper|Ada|compute capability (?:>= ?)?\d|sm_\d{2}|a newer GPU)\b`,
			`\bnot supported on (?:this|your|the current) (?:GPU|device|hardware|CPU)\b|\b(?:GPU|device) (?:does not|doesn't) support\b`,
		)),
			"hardware that cannot run what the task asks: another machine or another recipe is a person's choice", true},
		// An address the service does not let in: a database's or a firewall's allow-list ("no pg_hba.conf entry for host",
		// MySQL's "Host '…' is not allowed to connect", "IP address not in allow list"). Only whoever runs the service or
		// the network can let this machine in.
		{lazyRE(oneOf(`(?i)`,
			`\bno pg_hba\.conf entry for host\b`,
			`\bhost '[^'\n]+' is not allowed to connect\b`,
			`\b(?:IP|address|client|host|source)\b[^\n]{0,60}?\bnot (?:in|on|part of) (?:the |an? |your |its )?(?:(?:IP|network|access) )?(?:allow|white)[- ]?list\b`,
			`\bnot (?:allowlisted|whitelisted|allow-listed|white-listed)\b`,
			`\b(?:IP|address|client|host) (?:address )?[^\n]{0,60}?\b(?:is )?not (?:an? )?(?:authori[sz]ed|allowed|permitted) (?:network|IP|address|to connect|to access)\b`,
		)),
			"this machine's address is not on the service's allow-list: only whoever runs the service or the network can let it in", true},
		// A key or token held in hardware the machine does not have: a smart card or USB token with a code-signing key, a
		// security key, an HSM ("SCARD_E_NO_READERS_AVAILABLE", "Cannot find a smart card reader", "no YubiKey
		// detected"). Only the person who holds it can sign.
		{lazyRE(oneOf(`(?i)`,
			`(?-i:\bSCARD_E_(?:NO_READERS_AVAILABLE|NO_SMARTCARD|READER_UNAVAILABLE|CARD_UNSUPPORTED)\b)`,
			`\b(?:cannot|can't|could not|couldn't|unable to) (?:find|detect|open) (?:a |the |any )?(?:smart ?card(?: reader)?|hardware token|security key|yubikey|token device|HSM)\b`,
			`\b(?:smart ?card(?: reader)?|hardware token|security key|yubikey|HSM|eToken)\b[^.\n]{0,40}?\b(?:not (?:found|present|detected|connected|inserted|available)|no readers?|is missing)\b`,
			`\bno (?:smart ?card|yubikey|security key|hardware token)s? (?:reader )?(?:found|detected|present|inserted|connected)\b`,
			// PKCS#11, the interface to HSMs and tokens: its token absent, or no slot to find one in.
			`(?-i:\bCKR_TOKEN_NOT_PRESENT\b|\bCKR_DEVICE_REMOVED\b|\bTokenNotPresent\b)`,
			`(?s)\bpkcs ?#?11\b.{0,300}?\bno slots\b`,
		)),
			"a key held in hardware (a smart card, a USB token, a security key) that this machine does not have: only the person who holds it can sign", false},
		// A second factor only its owner has: a one-time code from an authenticator app or a text ("This operation
		// requires a one-time password from your authenticator" (npm's EOTP), "Please enter OTP code" (RubyGems)).
		{lazyRE(oneOf(`(?i)`,
			`\bone-time (?:password|passcode|code)\b`,
			`(?-i:\bEOTP\b|\bOTPVerificationError\b)`,
			`\b(?:enter|provide|requires?|needs?|missing) (?:an? |the |your )?(?:OTP|2FA|MFA|TOTP|two-factor|multi-factor)(?: authentication)? (?:code|token|password)\b`,
		)),
			"a one-time code from its owner's second factor (an authenticator, a text): only that person can give it", true},
		// A step of the outside world whose lead time is counted in working days: a certificate authority's validation,
		// a carrier's vetting of a campaign, a partner's renewal process. No retry gets it sooner.
		{lazyRE(`(?i)\b(?:takes?|taking|typically|usually|lead time|turnaround|processing|review|vetting|validation|approval|renewal)\b[^.\n]{0,50}?\b\d+(?:\s*(?:-|–|to)\s*\d+)?\s+(?:business|working) days\b|\b\d+(?:\s*(?:-|–|to)\s*\d+)?\s+(?:business|working) days'? (?:lead time|turnaround)\b`),
			"a step outside the team that takes working days (a validation, a vetting, a renewal): a person must follow it up", true},
		// An app store's review rejecting a release (App Review's "Guideline 5.1.1(v) - Legal - …", "Review was not
		// approved", Google Play's rejection for a policy): what the reviewer asks is a product change and a reply to them,
		// both a person's.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:App Review|app review|review team|Play Console|Google Play)\b[^.\n]{0,80}?\b(?:rejected|rejection|not approved)\b`,
			`\breview was not approved\b`,
			`(?-i:\bGuideline \d+\.\d+(?:\.\d+)*(?:\([a-z]+\))? - [A-Z])`,
			`\b(?:app|build|version|submission|release)\b[^.\n]{0,40}?\b(?:was )?rejected (?:by|during|in) (?:App |app |the )?(?:review|App Review|Google Play|Play)\b`,
		)),
			"an app store's review rejected the release: the change it asks for, and the reply to the reviewer, are a person's", false},
		// An account the work runs under that is switched off (a cloud subscription disabled and read-only, an account
		// suspended, a tenant deactivated): paying, or asking its owner, is a person's to do.
		{lazyRE(`(?i)\b(?:subscription|account|tenant|billing account|organi[sz]ation)\b[^.\n]{0,60}?\b(?:is|are|was|has been|have been) (?:currently )?(?:disabled|suspended|deactivated|closed|frozen)\b`),
			"the account or subscription the work runs under is disabled or suspended: only its owner can bring it back", true},
		// An API or service the task is built on that its provider shut down: moving to its successor changes what the
		// task is (new credentials, a new design), which a person decides.
		{lazyRE(`(?i)\b(?:APIs?|endpoints?|services?|SDKs?)\b[^.\n]{0,40}?\b(?:was|were|has been|have been) (?:permanently )?(?:shut down|decommissioned|retired|sunset|discontinued|turned off)\b`),
			"an API or service the task depends on was shut down by its provider: moving to its successor is a person's decision", true},
		// Something a person switched off: an account, a key or a resource "deactivated by an administrator", "suspended by
		// the organization". Only they can switch it on.
		{lazyRE(`(?i)\b(?:deactivated|disabled|suspended|revoked|locked|blocked|banned|archived|deleted|removed)\b (?:by|from) (?:an? |the |your |our )?(?:(?:account|org(?:ani[sz]ation)?|workspace|site|system|IT|security) )?(?:admin(?:istrator)?s?|owners?|organi[sz]ation|maintainers?|security team|IT)\b`),
			"something a person switched off (deactivated or suspended by an administrator or owner): only they can switch it on", true},
		// An integrity check that failed: Go's checksum database disagreeing with a module ("SECURITY ERROR … checksum
		// mismatch"), a signature that does not verify. Going around it is a security decision, not a retry.
		{lazyRE(oneOf(`(?i)`,
			`(?-i:\bSECURITY ERROR\b)`,
			`\bverifying [\w./@+-]+: checksum mismatch\b`,
			`\b(?:signature|checksum|digest) (?:verification )?(?:failed|mismatch|does not match|doesn't match)\b[^\n]{0,60}?\b(?:upstream|release|artifact|module|package|download)\b`,
		)),
			"an integrity check that failed (a checksum or signature that does not match): going around it is a security decision", true},
		// A step only a named person or role can take, however the tool or the agent says so: "Only the team's Account
		// Holder, Dana Whitfield, can accept the agreement", "Contact your vendor account manager", "The account owner
		// (CSM: R. Tanaka) must obtain and record the consent first".
		{lazyRE(oneOf(`(?i)`,
			`\bonly (?:the |a |an |your |our |their )?(?:[\w'’-]+ ){0,4}?(?:holders?|owners?|admins?|administrators?|managers?|leads?|team|approvers?|maintainers?|reviewers?|officers?|counsel|legal|department|DBAs?|on-call|members?)\b(?:,[^,\n]{1,40},)?\s+(?:can|may|is able to|are able to|is allowed to|are allowed to|is permitted to)\b`,
			`\bcontact (?:your|the) (?:[\w-]+ ){0,2}?(?:account manager|account team|administrator|admin|owner|representative|sales(?: team)?|vendor|DBA|security team|legal(?: team)?)\b`,
			// A step a role must take, which the agent's identity does not hold: "issuing a new certificate requires the
			// Account Holder role; the CI Apple ID has the Developer role".
			`\brequires? (?:the |an? )?(?:[\w-]+ ){1,4}?role\b`,
			`\b(?:account|project|repo(?:sitory)?|org(?:ani[sz]ation)?|team|product|release|data|site|workspace|billing|app) (?:owner|holder|admin(?:istrator)?|manager|lead)\b(?: \([^)\n]{1,40}\))?\s+(?:must|has to|needs to|will need to|will have to)\s+(?:first\s+)?(?:obtain|accept|approve|grant|sign|enable|request|file|add|create|renew|agree|purchase|upgrade|provide|record|confirm|authori[sz]e|review|invite|unlock)\b`,
		)),
			"a step only a named person or role can take", true},
		// A legal or contractual precondition: an agreement to accept, a customer's consent, export control, a legal
		// hold, an embargo. No attempt may take it on the organisation's behalf.
		{lazyRE(oneOf(`(?i)`,
			`\bUnavailable For Legal Reasons\b`,
			`\bexport[- ](?:control(?:led)?|compliance|license)\b`,
			`\b(?:controlled|restricted) under (?:the )?(?:EAR|ITAR)\b`,
			`\b(?:agree to|accept)\b[^.\n]{0,40}?\b(?:agreement|terms(?: of (?:service|use))?|terms and conditions)\b`,
			`\b(?:written |explicit |prior |customer's |user's |their )?consent\b[^.\n]{0,60}?\b(?:required|is needed|must be|first|on file|recorded|obtained)\b`,
			`\brequires? (?:the )?[\w'’ ]{0,30}?(?:written |explicit |prior )?consent\b`,
			`\b(?:legal|litigation) hold\b`,
			`\b(?:under (?:an? )?embargo|embargoed|coordinated disclosure)\b`,
			`\bmust be on file\b`,
		)),
			"a legal or contractual precondition (an agreement, a consent, export control, a hold or an embargo): only a person with the authority can meet it", true},
		// A dependency whose licence the organisation has not approved: "AGPL is not approved for software we distribute
		// (… OSS policy §3). Contact legal-oss@…", "the OSS policy lists GPL-3.0 as not approved".
		{lazyRE(oneOf(`(?i)`,
			`\b(?:licen[cs]es?|[AL]?GPL(?:-\d\.\d)?|SSPL|BUSL|copyleft)\b[^\n]{0,80}?\bnot (?:approved|allowed|permitted)\b`,
			`\bnot approved\b[^.\n]{0,40}?\b(?:licen[cs]e|OSS|open[- ]source) polic(?:y|ies)\b`,
			`\b(?:contact|ask|go through|goes through|go to|exceptions go through) (?:the )?legal\b|\blegal[\w.-]*@`,
		)),
			"a dependency whose licence the organisation has not approved: legal or a product decision must settle it", true},
		// A change that destroys data the organisation keeps: a migration linter's destructive change, a drop of a column
		// that still holds values. A person approves the loss or plans an archive.
		{lazyRE(`(?i)\bdestructive changes? detected\b|\b(?:would|will) (?:cause |mean )?data loss\b|\bdata loss\b[^.\n]{0,40}?\b(?:approv|sign-?off|policy)`),
			"a change that destroys data (a column or rows that still hold values): a person must approve the loss or plan an archive", true},
		// Input the task depends on that lives outside the workspace, in an attachment: "The Q3 price list is attached to
		// the email thread", "Use the v2 pricing table attached to the design doc".
		{lazyRE(`(?i)\battached (?:to|in|on) (?:the |a |an )?(?:[\w-]+ ){0,3}?(?:doc(?:ument)?|ticket|e-?mail(?: thread)?|thread|issue|page|message|comment|card)\b`),
			"input the task depends on that lives outside the workspace (an attachment): a person must supply it", false},
		// A registry name the agent's account may not publish under: "Namespace 'com.tidalio' is not allowed" (Maven
		// Central, until the namespace is verified).
		{lazyRE(`(?i)\bnamespace\s+'[^'\n]+'\s+is not (?:allowed|verified)\b|\bisn't allowed to upload to project\b`),
			"a name on a registry the agent's account may not publish under: its owner must verify or grant it", false},
		// A feature the account's plan does not include: "restricted to the Pro and Enterprise plans", "team 'acme' is on
		// the Hobby plan", "upgrade your plan". Paying for more is a person's decision.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:restricted|limited|available|only|exclusive) (?:to|on|in|for) (?:the )?(?:[\w-]+(?:,? (?:and|or) |, ))*(?:Pro|Team|Teams|Business|Enterprise|Premium|Paid|Plus|Growth|Scale|Ultimate)\b[^.\n]{0,15}?\b(?:plans?|tiers?|subscriptions?|editions?|accounts?|customers?)\b`,
			`\bupgrade (?:your |the |to an? )?(?:[\w-]+ )?(?:plan|subscription|tier|account|license)\b`,
			`\brequires? (?:an? )?(?:paid|Pro|Enterprise|Business|Team|premium|higher) (?:plan|tier|subscription|license|account|edition|seat)\b`,
			`\bon (?:the|a) (?:free|hobby|starter|basic|trial|personal|developer) (?:plan|tier)\b`,
			`\b(?:free|trial) (?:plan|tier|period)\b[^.\n]{0,20}?\b(?:limit|has expired|expired|ended|does not include|doesn't include)\b`,
		)),
			"a feature the account's plan does not include: paying for more is a person's decision", true},
		// A time or a gate the organisation sets on a change: a maintenance or change window, a freeze, a change ticket
		// its advisory board approves. Retrying before the window, or without the ticket, only fails again.
		{lazyRE(oneOf(`(?i)`,
			`\b(?:only (?:be )?(?:allowed|permitted|possible|run|applied|done|deployed) (?:during|in|within)|outside (?:of )?)\s*(?:the |an? )?(?:approved |scheduled |agreed |allowed |next )?(?:maintenance|change|deploy(?:ment)?|release|migration) window\b`,
			`\b(?:code|change|release|deploy(?:ment)?|merge)[ _-]freeze\b`,
			`\bCAB[- ]approved\b|\bchange[- ]advisory board\b|\bCAB\b[^.\n]{0,20}?\b(?:exception|approval|ticket)\b`,
			`\bchange (?:ticket|request|record)\b[^.\n]{0,30}?\b(?:required|not set|missing|needed|must)\b`,
			`\b(?:requires?|needs?|without) (?:an? )?(?:approved )?change (?:ticket|request|record)\b`,
			// A change that must wait for a window nobody has granted: "it requires a maintenance window with writes
			// stopped, and the ticket says none is pre-approved".
			`\brequires? (?:either )?(?:a |an )?(?:maintenance|change|downtime) window\b`,
			`\b(?:none|neither|nothing)\b[^.\n]{0,20}?\b(?:is|are|was|were) (?:pre-?)?approved\b|\bnot (?:been )?pre-?approved\b`,
		)),
			"a change window, freeze or change ticket the organisation sets: only a person can schedule or approve it", true},
		// Equipment that is not here for the agent: no device attached, one out for repair or booked by someone else.
		{lazyRE(oneOf(`(?i)`,
			`\bno (?:supported |connected |available |matching |attached |physical )?(?:devices?|probes?|boards?|phones?|handsets?|scanners?|printers?|readers?)\b[^.\n]{0,40}?\b(?:found|attached|connected|available|detected)\b`,
			`\b(?:checked out|booked|reserved|on loan|lent out|lent) (?:to|by) [\w.@-]+(?: [\w.@-]+)? until\b`,
			`\b(?:out for|in) repair\b`,
			`\bhealth=Retired\b|\b(?:retired|decommissioned|returned to (?:the )?vendor)\b[^.\n]{0,40}?\b(?:RMA|device|board|unit|host)\b|\bhas no devices\b`,
		)),
			"equipment the task needs that is not available to the agent: only a person can provide it", true},
		// A fact about the world outside the workspace that the service states and no edit changes: a name taken or not
		// offered, a kind of machine a region lacks, an account not enabled for what the task does, data past its
		// retention, a published version that cannot be replaced, a change made by hand where the task runs.
		{lazyRE(oneOf(`(?i)`,
			`\bnot available for registration\b|\b(?:domain|name|handle|username|package name|bundle id)\b[^.\n]{0,40}?\b(?:is )?already (?:registered|taken|in use)\b`,
			`\bnot (?:available|supported|offered) in (?:the |this |your )?(?:zones?|regions?|locations?)\b|\bnot supported in region\b`,
			`\baccount cannot currently\b|\b(?:charges|payouts|transfers)_enabled"?:\s*false\b|\baccount (?:is )?not (?:yet )?(?:activated|verified|enabled) for\b`,
			`\bbeyond the (?:allowed )?(?:time travel|retention) period\b|\b(?:retention|time travel) (?:period|window) (?:has )?(?:expired|passed|elapsed)\b|\bpast (?:its|the) retention\b`,
			`\bcannot (?:publish|upload) over (?:the )?previously published versions?\b|\bfile-name-reuse\b|\b(?:tag|version|release)s? (?:are|is) immutable\b`,
			`\bapplied migrations? not resolved locally\b|\bdrift detected\b|\b(?:applied|changed|modified) (?:by hand|manually) (?:in|on) (?:prod(?:uction)?|the live)\b`,
			// A name another account holds ("BucketAlreadyExists"), a repository archived, a CAA record that names another
			// authority.
			`(?-i:\bBucketAlreadyExists\b)|\balready (?:owned|taken|registered) by (?:another|a different|some other) (?:account|user|organi[sz]ation|customer)\b`,
			`\brepository (?:was|is|has been) archived\b|\barchived so it is read-only\b`,
			`\bCAA record\b[^\n]{0,80}?\b(?:prevents|forbids|does not allow|doesn't allow|only (?:authori[sz]es|allows|permits))\b`,
		)),
			"a fact of the world outside the workspace (a name taken, a region without the machine, an account not enabled, data past its retention, a version already published, a change made by hand) that no edit changes: a person must decide", true},
		// What another team owns and grants, named by the file that says so: "ACLs for payments.* topics are managed in
		// acme/payments-kafka-config (CODEOWNERS: @acme/payments-platform)".
		{lazyRE(`(?i)\b(?:managed|owned|maintained|administered|controlled|granted|defined)\b[^.\n]{0,100}?\bCODEOWNERS\b`),
			"a resource another team owns and grants: only they can change it", false},
		// A sender identity the mail provider has not verified: "Email address is not verified. The following identities
		// failed the check" (SES), "does not match a verified Sender Identity" (SendGrid), "domain … not verified for
		// relay". Verifying it takes DNS records or the provider's console.
		{lazyRE(`(?i)\b(?:email address|identit(?:y|ies)|sender|from address|domain)\b(?:[^.\n]|\.\w){0,60}?\bnot verified\b|\bdoes not match a verified Sender Identity\b`),
			"a sender identity the mail provider has not verified: its DNS or the provider's console is a person's", true},
		// A document or page the work depends on that is not shared with the agent: "You need access. Ask for access"
		// (Google Drive), "You need permission to access this item. Request access" (SharePoint), "You don't have
		// permission to view this page" (Confluence).
		{lazyRE(oneOf(`(?i)`,
			`\byou need (?:access|permission)\b`,
			`\b(?:ask|request) (?:for )?access\b`,
			`\baccess required\b`,
			`\byou (?:don't|do not) have (?:access|permission) to (?:view|see|open|read|access) (?:this|the) (?:page|document|doc|file|item|space|folder|sheet)\b`,
		)),
			"a document the work depends on that is not shared with the agent: only its owner can share it", true},
		{lazyRE(`(?i)\buntil (?:someone|somebody|a human|a person|an? (?:account )?(?:admin|administrator|owner|maintainer))\b|\b(?:someone|somebody|a human|a person|an? (?:account )?(?:admin|administrator|owner|maintainer))\s+(?:has to|needs to|will have to)\b`),
			"an action only a person can take", false},
		// A change that waits on a person's approval or review, however a forge or a process words it: "needs approval
		// from", "Waiting on code owner review from acme/security", "At least 1 approving review is required by reviewers
		// with write access", "protection rules require a review".
		{lazyRE(oneOf(`(?i)`,
			`\b(?:needs?|requires?|requiring|without|pending|waiting (?:for|on)|awaiting)\s+(?:[\w'-]+\s+){0,3}?(?:approval|sign-?off)(?:\s+(?:from|by|of|before)\b|\s*[.,;:)]|\s*$)`,
			`\bprotection rules?\b[^.;\n]{0,40}?\brequir(?:es|ing|e)\s+(?:a\s+)?(?:review|approval)\b`,
			`\b(?:waiting (?:for|on)|awaiting|pending|needs?|requires?)\s+(?:an? )?(?:code ?owners?'?s?|maintainers?'?s?|security|human|manual|[\w-]+ team(?:'s)?) (?:review|approval|sign-?off)\b`,
			`\b(?:approving )?reviews? (?:is|are) required\b`,
			`\b(?:approvals?|approving reviews?|sign-?offs?) (?:is |are )?(?:required|needed)\b`,
			// A rule's count of the approvals it wants and from whom: "Required approvals: 1 from group @acme/security".
			`\brequired approvals?:?\s*\d+\s+from\b`,
			// A change a named role must approve: "must be approved by a Finance Controller", "booked as new lines and
			// approved by the Head of Accounting".
			`\b(?:must|need to|needs to|has to|have to|are to|is to) be\b[^.\n]{0,60}?\b(?:approved|signed off|authori[sz]ed) by\b`,
		)),
			"a change that needs someone's approval", true},
		{lazyRE(`(?i)\b(?:task|plan|spec(?:ification)?|ticket|issue|instructions?|requirements?|story)\s+(?:says|said|asks|asked|refers|references|mentions|points|tells|names|requires|links)\b(?:[^.;:]|\.\S|\.["')]?\s+){0,160}?\b` + anyOf(
			`does not exist`,
			`doesn't exist`,
			`did not exist`,
			`(?:isn't|is not|aren't|are not) (?:in|anywhere in) (?:this|the) (?:repo|repository|codebase|workspace|project)`,
			`(?:is|are) missing from (?:this|the) (?:repo|repository|codebase|workspace|project)`,
			`(?:could not|couldn't|cannot|can't) find (?:it|them|that|this|those)`,
			`no such \w+ (?:is|was|exists|can be found)`,
			`has an empty description`,
			`no [\w-]+ (?:is|was|has been) (?:attached|provided|given|linked|included)`,
			`no [\w' -]{1,40}? exists`,
			`no such`,
		) + `\b`),
			"missing context: the task refers to something that is not there", false},
		// The definition the task depends on is nowhere: "no definition of the 'new pricing tiers' exists — searched
		// docs/ …", "no description of the expected format was found".
		{lazyRE(`(?i)\bno (?:definition|description|specification|spec|documentation|details?|values?) (?:of|for)\b[^.;\n]{0,80}?\b(?:exists?|(?:is|was|were) (?:given|provided|found|anywhere)|found)\b` +
			// What the agent looked for exists nowhere it can read: "No response or resolution targets for the
			// enterprise tier exist anywhere I can read."
			`|\bno\b[^.;\n]{1,80}?\bexists? anywhere (?:I|the agent|we) can (?:read|see|find|reach)\b` +
			// "Nothing in the ticket, the chat export or the docs says which dashboard."
			`|\bnothing in the\b[^.;\n]{0,60}?\bsays? (?:which|what|whether|how|where)\b`),
			"missing context: the task refers to something that is not there", false},
	}
})

var (
	// expectationLineRe is a line of a test's expectation: what it wants, expected, asserted.
	expectationLineRe = lazyRE(`(?im)^.*(?:\bassert|\bwant\b.*\b(?:got|error =)|\b(?:got|error =).*\bwant\b|\bexpected\b.*\b(?:got|but was|actual|received)\b|\bexpect\().*$`)
	// literalRe is a string literal on such a line: in double quotes, backticks, or single quotes that open after a
	// space or a bracket (an apostrophe inside a word opens none).
	literalRe = lazyRE("\"[^\"\n]*\"|(?:^|[\\s(=,:\\[])'[^'\n]*'|`[^`\n]*`")
)

// usageLimitWhy is why a used-up quota is permanent, unless its window is a minute or a second (shortQuotaRe): a rate
// that lifts by itself once the client slows down or batches.
const usageLimitWhy = "a usage limit or quota that no retry lifts before it resets"

// shortQuotaRe is a quota counted over a minute or seconds ("limit 'Read requests per minute per user'",
// "RATE_LIMIT_EXCEEDED"), with no longer window named beside it.
var (
	shortQuotaRe = lazyRE(`(?i)\bper (?:minute|second|\d+ (?:seconds|minutes))\b|\bRATE_LIMIT_EXCEEDED\b`)
	longQuotaRe  = lazyRE(`(?i)\bper (?:day|month|week|hour)\b|\b(?:daily|monthly|weekly|hourly)\b`)
)

// policyWhy is why a policy the change conflicts with is permanent, unless the rules a protected branch named are
// about the commits themselves (commitRulesRe), which the agent meets by making them again.
const policyWhy = "a conflict with a security or organisational policy: a person must decide whether the task or the policy gives way"

// commitRulesRe are a protected branch's rules the agent's own commits can meet ("Commits must have verified
// signatures", a DCO sign-off, a commit message format, no merge commits); branchReviewRe those only people meet.
var (
	commitRulesRe  = lazyRE(`(?i)\bcommits? must (?:have verified signatures|be signed)\b|\bSigned-off-by\b|\bDCO\b|\bcommit messages? must\b|\bmust not contain merge commits\b|\blinear history\b`)
	branchReviewRe = lazyRE(`(?i)\bpull request\b|\breviews?\b|\bapprov|\bstatus checks?\b|\bcode ?owners?\b|\bnot allowed to (?:force[- ])?push\b`)
)

// policyFindingRe is a policy-as-code test's finding on a file of the workspace (conftest, OPA: "FAIL - k8s/a.yaml -
// main - Containers must not run as root: a"): what the agent wrote breaks a rule it can meet by writing it again.
var policyFindingRe = lazyRE(`(?m)^\s*(?:FAIL|WARN|DENY) - \S+ - \S+ - .*$`)

// passesAnyway reports a failure of a permanent kind (why) that text shows will pass by itself or is the agent's to
// meet: a lock its holder lets go of within minutes, a quota counted per minute, a protected branch's rules about the
// commits themselves.
func passesAnyway(why, text string) bool {
	switch why {
	case lockHeldWhy:
		return lockReleasedSoonRe.MatchString(text)
	case usageLimitWhy:
		return shortQuotaRe.MatchString(text) && !longQuotaRe.MatchString(text)
	case policyWhy:
		return commitRulesRe.MatchString(text) && !branchReviewRe.MatchString(text)
	}
	return false
}

// lockHeldWhy is why a lock someone else holds is permanent, unless its holder lets go within minutes
// (lockReleasedSoonRe): a scheduled job, another run's apply.
const lockHeldWhy = "a lock another person or machine holds: only they, or someone who knows it is safe to break, can release it"

// lockReleasedSoonRe says the lock's holder ends and lets go within minutes: "it takes about 4 minutes and releases the
// lock when it ends", "usually finishes in about 3 minutes", "will release it in a minute".
var lockReleasedSoonRe = lazyRE(`(?i)\b(?:takes|finish(?:es)?|completes?|ends|runs? for|releases? (?:it|the lock))\b[^.\n]{0,30}?\b(?:in |within |for )?(?:about |around |roughly |under |less than |~)?(?:a|an|one|\d+)\s*(?:s|secs?|seconds?|m|mins?|minutes?)\b` +
	// The holder, a CI run still going: "in_progress  infra prod up  main  push  9911  1m40s" (gh run list).
	`|\bin_progress\b|\b(?:job|run|workflow|pipeline|apply|plan|deploy)\b[^.\n]{0,40}\b(?:is )?(?:still running|in progress)\b`)

// ownedPathDeniedRe is a permission refused on a path the agent's own code, tests or image made: under a temporary
// directory (Go's t.TempDir(), pytest's tmp_path, mkdtemp), relative to the workspace ("open
// /tmp/TestSave1843092/001/.config.yaml.tmp: permission denied"), or in the app directory of an image built from the
// workspace (/app, /usr/src/app, as Docker's guides lay images out), whose owner the workspace's Dockerfile sets. Its
// mode is the code's doing, a bug to fix. Node's EACCES is taken with the error object it prints under it.
var ownedPathDeniedRe = lazyRE(`(?im)(?:^|[\s'"(=\[])` + ownedDirs + `[^\s:'"]*['"]?:\s*permission denied\b|\bPermissionError: \[Errno 13\] Permission denied: '` + ownedDirs + `[^']*'|\bEACCES: permission denied, \w+ '` + ownedDirs + `[^']*'(?:\s*\n(?:\s+at [^\n]*\n)*\s+at [^\n]*\{[^}]{0,300}\})?`)

// ownedDirs are where the paths the agent's work makes live (ownedPathDeniedRe), each from the path's start: "/app/" in
// "/var/log/app/app.log" is no app directory.
const ownedDirs = `(?:/tmp/|/var/tmp/|/var/folders/|/private/var/folders/|/private/tmp/|\.{1,2}/|/app/|/usr/src/app/)`

// execBitRe is a shell or an exec refusing to run a file of the workspace that is not executable ("/bin/sh: 1:
// ./scripts/gen.sh: Permission denied", "fork/exec ./bin/tool: permission denied"): its mode, which the agent sets
// itself (chmod +x), not an access someone must grant.
var execBitRe = lazyRE(`(?im)\b(?:sh|bash|dash|zsh)(?::\s*(?:line\s+)?\d+)?:\s*(?:\d+:\s*)?\.{1,2}/[\w./-]+:\s*Permission denied\b|\b(?:fork/exec|exec:?)\s+"?\.{1,2}/[\w./-]+"?:\s*permission denied\b`)

// secretScanRe is a secret scanner refusing a push: GitHub push protection, GitLab secret detection, gitleaks in a hook.
var secretScanRe = lazyRE(oneOf(`(?i)`,
	`\bpush protection\b`,
	`\bpush cannot contain secrets\b`,
	`\bGH013\b`,
	`\bsecrets? (?:detected|found)\b`,
	`\bsecret (?:scanning|detection)\b[^.\n]{0,60}\b(?:block|reject|declin|found|violation)`,
	`\bleaks? found\b`,
))

var (
	// An HTTP 401/403 refused to orch's agent is a credentials problem; the same status inside a failing
	// test's assertion ("expected 200, got 401") is the code under test misbehaving, which a retry can fix.
	httpAuthRe = lazyRE(oneOf(`(?i)`,
		`\bunauthori[sz]ed\b`,
		`\bforbidden\b`,
		`\b(?:HTTP(?:/\d(?:\.\d)?)?|status(?: ?code)?|code|response|returned|got)(?: error)?[\s:=]{0,3}(?:401|403)\b`,
		`\b(?:401|403)\s+(?:unauthori[sz]ed|forbidden)`,
	))
	rateLimitRe = lazyRE(`(?i)\brate[ _-]?limit|\btoo many requests\b|\bretry-after\b|\bsecondary rate\b`)
	// A test runner's report of a failing test (an assertion, pytest's "FAILED path::test", Surefire's counts, jest's
	// "● name"): what it names is the code under test misbehaving.
	testAssertionRe  = lazyRE(`(?im)\bexpected\b|\bwant(?:ed)?\b|\bassert|--- FAIL|\bFAIL:|\btest\w*\s+(?:failed|fails)|\bFAILED\s+\S+::\S|\bTests run: \d+|^\s*●\s`)
	httpAuthCauseWhy = "an authorization failure (401/403) that needs access only a human can grant"
)

// Decide judges a failed task's attempt history (oldest first, one error or summary per attempt):
// escalate when the latest error is permanent, when the last minLoopRun errors are alike, or when they
// oscillate A-B-A; retry otherwise, with guidance for the next attempt.
func (h *Heuristic) Decide(ctx context.Context, in DecideInput) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	history := in.AttemptHistory
	if len(history) == 0 {
		return Decision{}, errEmptyHistory
	}
	threshold := h.threshold()
	// Each failure read once (signature, subject, text); consecutive likenesses, computed once: every rule below
	// reads them.
	fails := make([]failure, len(history))
	sims := make([]float64, len(history)-1)
	for i := range history {
		if err := ctx.Err(); err != nil {
			return Decision{}, err
		}
		fails[i] = failureOf(history[i])
		if i > 0 {
			sims[i-1] = fails[i-1].likeness(fails[i])
		}
	}
	d := Decision{Similarity: mean(sims)}
	// The rules read the latest error without orch's own GUIDANCE echo; similarity above uses the raw
	// strings, as the Python loop detector did.
	latest := newDoc(history[len(history)-1]).text
	quote := briefError(latest)

	why := permanentCause(failingNow(history))
	if why == "" && asksAPerson(latest) {
		why = "the agent asking a person to decide"
	}
	if why != "" {
		d.Decision, d.Permanent = Escalate, true
		d.Reason = fmt.Sprintf("the latest error shows %s; no retry can fix that (%q)", why, quote)
		return d, nil
	}

	// The run of alike errors ending at the latest one, or, when one failure is named differently from attempt to
	// attempt, the attempts that hang together by what failed.
	run := 1
	for i := len(sims) - 1; i >= 0 && sims[i] >= threshold; i-- {
		run++
	}
	alike := newLikeness(fails, threshold)
	if run < minLoopRun {
		run = max(run, alike.loopRun())
	}
	if run >= minLoopRun {
		d.Decision = Escalate
		first := len(history) - run
		// The reason cites the run's own similarity (of the texts: a run alike only by what failed says so);
		// Decision.Similarity stays the whole history's mean.
		textual := make([]float64, 0, run-1)
		for i := first + 1; i < len(fails); i++ {
			textual = append(textual, fails[i-1].sig.similarity(fails[i].sig))
		}
		if t := mean(textual); t >= threshold {
			d.Reason = fmt.Sprintf("failed %d times in a row with similar errors (error similarity %d%%): retrying is stuck in a loop",
				run, percent(t))
		} else {
			d.Reason = fmt.Sprintf("failed %d times in a row on the same thing%s, worded differently each time (text similarity %d%%): retrying is stuck in a loop",
				run, alike.named(first), percent(t))
		}
		return d, nil
	}
	if back := alike.recurrence(); back >= 0 {
		d.Decision = Escalate
		n := len(history)
		if back == n-3 {
			d.Reason = fmt.Sprintf("errors oscillate between two failures (attempts %d and %d fail alike, attempt %d differently): fixing one breaks the other",
				n-2, n, n-1)
		} else {
			d.Reason = fmt.Sprintf("the failure of attempt %d is back at attempt %d%s after different failures in between: fixing one breaks another",
				back+1, n, fails[n-1].subj.namedIn())
		}
		return d, nil
	}

	d.Decision = Retry
	kind, guidance := retryGuidance(latest)
	var b strings.Builder
	switch {
	case len(history) == 1:
		d.Reason = fmt.Sprintf("first failure, and %s is usually fixable on another attempt", kind)
	case sims[len(sims)-1] >= threshold:
		d.Reason = fmt.Sprintf("same error as the previous attempt (similarity %d%%), but not yet %d times in a row: one more attempt with a different approach",
			percent(sims[len(sims)-1]), minLoopRun)
		b.WriteString("The previous approach failed the same way: try a different approach, not a variation of the last one. ")
	default:
		d.Reason = fmt.Sprintf("the error changed since the previous attempt (similarity %d%%): the agent is making progress, and %s is fixable",
			percent(sims[len(sims)-1]), kind)
	}
	b.WriteString(guidance)
	if quote != "" {
		// The failure comes first: it is what the agent must fix, and what a person reads in a one-line event.
		g := fmt.Sprintf("Latest error: %q. ", quote) + b.String()
		b.Reset()
		b.WriteString(g)
	}
	d.GuidanceForRetry = b.String()
	return d, nil
}

// failingNow is the failure the latest attempt shows: its text, and, when it says it failed the same way as the one
// before ("…; same error.", "the same handshake failure"), the failure of that attempt too, back over every attempt that
// says so: what the latest attempt points back at is what fails now.
func failingNow(history []string) string {
	n := len(history) - 1
	text := newDoc(history[n]).text
	for i := n; i > 0 && sameAsBeforeRe.MatchString(history[i]); i-- {
		text = newDoc(history[i-1]).text + "\n" + text
	}
	return text
}

// sameAsBeforeRe is an attempt saying it failed as the one before did: "same error", "the same 403", "fails the same
// way", "same handshake failure".
var sameAsBeforeRe = lazyRE(`(?i)\b(?:the )?same (?:\w+ ){0,2}(?:error|failure|exception|refusal|denial|response|result|message|problem)s?\b|\b(?:fails?|failed|failing) (?:again )?(?:in )?the same way\b`)

// asksAPerson reports a failure in which the agent puts a question to a person ("Which approach should I take?"):
// no retry answers it. Questions a tool prints ("Is the docker daemon running?") and doubts without a question
// ("I'm not sure why yet") do not count.
func asksAPerson(failure string) bool {
	d := newDoc(failure)
	for _, s := range d.sentences() {
		if d.toolOutput(s) || !strings.HasSuffix(s.text, "?") {
			continue
		}
		if uncertaintyRes[0].MatchString(s.text) || addressedRe.MatchString(s.text) && classifyAsk(s.text, false) == askReal {
			return true
		}
	}
	return false
}

// permanentCause names why err cannot be fixed by retrying, or "" when it might be.
func permanentCause(err string) string {
	// A file of the workspace that is not executable, or a path the code under test made, is the agent's to fix,
	// whatever "Permission denied" says.
	text := ownedPathDeniedRe.ReplaceAllString(execBitRe.ReplaceAllString(err, ""), "")
	// What a test expects, quoted on its assertion's line, is the code's data ("want "permission denied: …"",
	// "assert 'FATAL: disk quota exceeded' in caplog.text"), not the environment failing.
	text = expectationLineRe.ReplaceAllStringFunc(text, func(l string) string { return literalRe.ReplaceAllString(l, `""`) })
	text = policyFindingRe.ReplaceAllString(text, "")
	for _, c := range permanentCauses() {
		if c.re.MatchString(text) && !(c.notInTest && testAssertionRe.MatchString(err)) && !passesAnyway(c.why, text) {
			return c.why
		}
	}
	// GitHub and others answer a rate limit with 403: a limit that lifts in seconds is transient, not a refusal.
	if httpAuthRe.MatchString(err) && !testAssertionRe.MatchString(err) && !rateLimitRe.MatchString(err) {
		return httpAuthCauseWhy
	}
	return ""
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func percent(x float64) int { return int(math.Round(x * 100)) }

// retryKind is one family of fixable errors and what to tell the agent about it.
type retryKind struct {
	name     string
	re       *pattern
	guidance func(err string) string
}

var (
	moduleNameRes = []*pattern{
		lazyRE(`(?i)no module named\s+['"]?([\w.\-]+)`),
		lazyRE(`(?i)cannot find module\s+['"]([^'"]+)['"]`),
		lazyRE(`(?i)no required module provides package\s+([^\s;:]+)`),
		lazyRE(`(?i)cannot find package\s+"?([^\s"]+)`),
		lazyRE("(?i)can't find crate for `([^`]+)`"),
		lazyRE("(?i)unresolved import `([^`]+)`"),
		lazyRE(`(?i)missing go\.sum entry for module providing package\s+([^\s;(]+)`),
		lazyRE(`(?i)(?:npm ERR! 404|E404)\D*'([^'@\s]+)`),
	}
	symbolRes = []*pattern{
		lazyRE(`undefined:\s+([\w.]+)`),
		lazyRE("cannot find (?:value|function|type|struct|trait|macro|crate) `([^`]+)`"),
		lazyRE(`Cannot find name '([^']+)'`),
		lazyRE(`NameError: name '([^']+)' is not defined`),
		lazyRE(`cannot find symbol(?:\s*symbol:\s*\w+\s+(\w+))?`),
		lazyRE(`has no (?:field or method|attribute|member|property)\s+'?(\w+)'?`),
		lazyRE("no (?:method|field|function|associated item) named `([^`]+)`"),
		lazyRE(`([\w.]+) is not defined`),
	}
	locationRe  = lazyRE(`(?:^|[\s(])(\.{0,2}/?[\w./-]+\.\w{1,5}:\d+(?::\d+)?)`)
	testNameRe  = lazyRE(`(?:--- FAIL:|FAIL:|FAILED)\s+([\w/.:\[\]-]+)`)
	missingPath = lazyRE(`(?i)(?:open|stat|read|load|cannot open|can't open|No such file or directory:?)\s+['"]?([\w./-]+\.\w+|[\w./-]*/[\w./-]+)['"]?|['"]([\w./-]+)['"]\s*(?:does not exist|not found)`)
)

func firstGroup(res []*pattern, s string) string {
	for _, re := range res {
		if m := re.FindStringSubmatch(s); m != nil {
			for _, g := range m[1:] {
				if g != "" {
					return strings.TrimRight(strings.Trim(g, `'"`), ".,;:")
				}
			}
		}
	}
	return ""
}

// ecosystem guesses the toolchain from the error's wording, to name the manifest to fix.
func ecosystem(err string) (manifest, install string) {
	l := strings.ToLower(err)
	for _, e := range ecosystems {
		for _, sign := range e.signs {
			if strings.Contains(l, sign) {
				return e.manifest, e.install
			}
		}
	}
	return "the project's dependency manifest", "the package manager"
}

// ecosystems are the package managers an error can name, in the order they are tried, each with the words (lower
// case) that say an error is its own.
var ecosystems = []struct {
	signs             []string
	manifest, install string
}{
	{[]string{"no module named", "modulenotfounderror", "importerror", "pip"},
		"requirements.txt or pyproject.toml", "pip install"},
	{[]string{"go.mod", "go.sum", "no required module", "cannot find package", ".go:"},
		"go.mod", "go get, then go mod tidy"},
	{[]string{"cannot find module", "npm", "module_not_found", "node_modules"},
		"package.json", "npm install"},
	{[]string{"crate", "cargo", "unresolved import"},
		"Cargo.toml", "cargo add"},
}

// retryKinds are tried in order; the first match names the error. Specific families come before broad
// ones (a missing module before a generic import or compile error).
var retryKinds = []retryKind{
	{"a missing dependency", lazyRE(oneOf(`(?i)`,
		`no module named`,
		`modulenotfounderror`,
		`importerror`,
		`cannot find module`,
		`module_not_found`,
		`no required module provides`,
		`cannot find package`,
		`missing go\.sum entry`,
		`updates to go\.mod needed`,
		`can't find crate`,
		`unresolved import`,
		`npm ERR! 404`,
		`\bE404\b`,
		`could not resolve dependenc`,
		`package .* is not in (?:GOROOT|std)`,
	)),
		func(err string) string {
			manifest, install := ecosystem(err)
			name := firstGroup(moduleNameRes, err)
			if name == "" {
				name = "the missing dependency"
			}
			return fmt.Sprintf("%s is not available: either declare it in %s and install it (%s) before using it, or avoid it and use the standard library or a dependency the project already has.", name, manifest, install)
		}},
	{"a timeout or network error", lazyRE(oneOf(`(?i)`,
		`timed? ?out`,
		`timeout`,
		`deadline exceeded`,
		`ETIMEDOUT`,
		`ECONNRESET`,
		`ECONNREFUSED`,
		`connection (?:refused|reset)`,
		`network`,
		`temporary failure in name resolution`,
		`could not resolve host`,
		`\b(?:429|502|503|504)\b`,
		`rate.?limit`,
		`too many requests`,
		`service unavailable`,
		`TLS handshake`,
	)),
		func(string) string {
			return "This looks transient (a timeout or network error): run it again; if a test is what timed out, make it robust: no real network in tests (use local fixtures or fakes), no fixed sleeps, and a timeout that fits the work."
		}},
	{"running out of turns", lazyRE(oneOf(`(?i)`,
		`maximum number of turns`,
		`max(?:imum)?[ _-]turns`,
		`ran out of turns`,
		`running out of turns`,
		`out of (?:turns|context)`,
		`context (?:window|length) exceeded`,
		`maximum budget`,
	)),
		func(string) string {
			return "The previous attempt ran out of turns: narrow the scope: make the smallest change that completes the task, do not explore unrelated code, and run the build and tests early rather than at the end."
		}},
	{"a syntax error", lazyRE(`(?i)syntaxerror|syntax error|indentationerror|unexpected token|expected ['"';:)}\]]|unterminated|unexpected EOF|parse error`),
		func(err string) string {
			loc := firstGroup([]*pattern{locationRe}, err)
			where := ""
			if loc != "" {
				where = " at " + loc
			}
			return fmt.Sprintf("Fix the syntax error%s: re-read the whole edited block around it (brackets, quotes, indentation), not just the reported line, and build before running tests.", where)
		}},
	{"a compile error", lazyRE(oneOf(`(?i)`,
		`undefined:`,
		`cannot find (?:value|function|type|struct|trait|macro|symbol|name)`,
		`nameerror`,
		`is not defined`,
		`has no (?:field or method|attribute|member|property)`,
		`does not compile`,
		`doesn't compile`,
		`could not compile`,
		`compil(?:e|ation) (?:error|failed)`,
		`build failed`,
		`error\[E\d+\]`,
		`error TS\d+`,
		`declared and not used`,
		`imported and not used`,
		`undeclared`,
	)),
		func(err string) string {
			sym := firstGroup(symbolRes, err)
			loc := firstGroup([]*pattern{locationRe}, err)
			var b strings.Builder
			b.WriteString("Fix the compile error first")
			if sym != "" {
				fmt.Fprintf(&b, ": %s is not defined where it is used", sym)
				if loc != "" {
					fmt.Fprintf(&b, " (%s)", loc)
				}
				fmt.Fprintf(&b, "; define %s, import or export it from the package that declares it, or correct the name", sym)
			} else if loc != "" {
				fmt.Fprintf(&b, " at %s", loc)
			}
			b.WriteString(". Build the whole project (not just the edited file) before running the tests.")
			return b.String()
		}},
	{"a runtime crash", lazyRE(`(?i)panic:|nil pointer|null ?pointer|segmentation fault|index out of range|indexerror|keyerror|attributeerror|cannot read propert|undefined is not|unwrap\(\)` + "|called `Option::unwrap\\(\\)`"),
		func(err string) string {
			loc := firstGroup([]*pattern{locationRe}, err)
			where := "at the reported line"
			if loc != "" {
				where = "at " + loc
			}
			return fmt.Sprintf("The code crashes %s on a nil, missing or out-of-range value: find where that value should have been set, handle the empty case, and add a test that reproduces the crash.", where)
		}},
	{"a type error", lazyRE(oneOf(`(?i)`,
		`typeerror`,
		`mismatched types`,
		`type mismatch`,
		`incompatible types?`,
		`cannot use .* as .* (?:value|type)`,
		`error TS2322`,
		`expected \w+, (?:got|found) \w+`,
		`not assignable to`,
	)),
		func(string) string {
			return "A value of the wrong type reaches the failing call: check what the callee expects against what the caller passes, convert at the boundary or fix the caller, and add a test for that input."
		}},
	{"a missing file", lazyRE(`(?i)no such file or directory|ENOENT|filenotfounderror|file not found|does not exist|cannot open|can't open`),
		func(err string) string {
			p := firstGroup([]*pattern{missingPath}, err)
			if p == "" {
				p = "The path it needs"
			}
			return fmt.Sprintf("%s does not exist: check the path relative to the workspace root, create it if the task needs it, and do not assume files that are not in the repository.", p)
		}},
	{"a lint failure", lazyRE(`(?i)\b(?:lint(?:er|ing)?|go vet|gofmt|golangci(?:-lint)?|eslint|flake8|ruff|pylint|clippy|prettier|mypy|staticcheck)\b`),
		func(string) string {
			return "The linter rejects the change: run it locally and fix every finding rather than suppressing it."
		}},
	{"a failing test", lazyRE(oneOf(`(?i)`,
		`--- FAIL`,
		`(?-i:\bFAIL(?:ED)?\b)`,
		`assertionerror`,
		`assert(?:ion)? failed`,
		`\btests? (?:failed|fails|failing)`,
		`expected .* (?:but )?(?:got|received|was)`,
		`got .* want`,
		`\b[1-9]\d* failed\b`,
	)),
		func(err string) string {
			name := firstGroup([]*pattern{testNameRe}, err)
			what := "Tests fail: read the failing assertions"
			if name != "" {
				what = "Test " + name + " fails: read its assertion"
			}
			return what + " and fix the code under test (change the test only where it contradicts the task), then run the whole suite, not just that test, before finishing."
		}},
}

// retryGuidance names the kind of the latest error and what to tell the next attempt.
func retryGuidance(err string) (kind, guidance string) {
	for _, k := range retryKinds {
		if k.re.MatchString(err) {
			return k.name, k.guidance(err)
		}
	}
	return "an ordinary error", "Find the root cause of this error rather than patching its symptom, fix it, and verify with the build and the tests before finishing."
}
