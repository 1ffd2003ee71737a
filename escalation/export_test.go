package escalation

// The limits of escalation.go, for the external tests that check them.
const (
	MaxOutput   = maxOutput
	MaxError    = maxError
	MaxQuestion = maxQuestion
	MaxErrors   = maxErrors
)
