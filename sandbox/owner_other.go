//go:build !unix

package sandbox

import "errors"

// owner cannot be told from a file here: DockerConfig.User must say who runs the agent.
func owner(path string) (string, error) {
	return "", errors.New("the owner of a directory cannot be read on this platform; set DockerConfig.User")
}
