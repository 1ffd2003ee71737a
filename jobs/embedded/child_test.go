package embedded

func runChild(mode string) int { return 2 }

const childEnv = "ORCH_EMBEDDED_TEST_CHILD"
