package store

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisURL is where orch's Redis is, as ORCH_REDIS_URL names it: one server, or the primary that Redis Sentinel
// elects.
//
//	redis://[[USER]:PASSWORD@]HOST:PORT[/DB]            one server (rediss:// for TLS): go-redis's ParseURL
//	redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT…]/MASTER[/DB][?sentinel_username=U&sentinel_password=P]
//
// The Sentinel form is the one redis-py's and Celery's users know (redis-sentinel-url): the hosts are the sentinels
// (port 26379 when none is given), MASTER the name they monitor, USER and PASSWORD the primary's (requirepass or an
// ACL user), and the sentinels' own credentials, when they have any, the query's. rediss+sentinel:// speaks TLS to
// sentinels and primary alike. The client asks the sentinels for the primary, follows their +switch-master
// announcements, and drops a connection that answers READONLY (a primary demoted under it): a failover needs no
// restart of any orch process.
type RedisURL struct {
	server   *redis.Options
	failover *redis.FailoverOptions
}

// defaultSentinelPort is Redis Sentinel's own port.
const defaultSentinelPort = "26379"

// ParseRedisURL reads a Redis URL in either form. Its errors never hold the URL's password.
func ParseRedisURL(s string) (RedisURL, error) {
	scheme, _, _ := strings.Cut(s, "://")
	switch scheme {
	case "redis+sentinel", "rediss+sentinel":
		opt, err := parseSentinelURL(s)
		return RedisURL{failover: opt}, err
	}
	opt, err := redis.ParseURL(s)
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // url.Error quotes the URL, password and all
	}
	if err != nil {
		return RedisURL{}, err
	}
	return RedisURL{server: opt}, nil
}

// parseSentinelURL reads redis+sentinel://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]…]/MASTER[/DB][?sentinel_username=…
// &sentinel_password=…], or rediss+sentinel:// for TLS. Its errors never quote the URL: it may hold a password.
func parseSentinelURL(s string) (*redis.FailoverOptions, error) {
	scheme, rest, _ := strings.Cut(s, "://")
	rest, query, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(rest, "/")
	opt := &redis.FailoverOptions{}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		if err := sentinelUser(opt, authority[:at]); err != nil {
			return nil, err
		}
		authority = authority[at+1:]
	}
	var err error
	if opt.SentinelAddrs, err = sentinelAddrs(authority); err != nil {
		return nil, err
	}
	if len(opt.SentinelAddrs) == 0 {
		return nil, errors.New("no sentinel: want HOST:PORT[,HOST:PORT…] after " + scheme + "://")
	}
	if opt.MasterName, opt.DB, err = sentinelPath(path); err != nil {
		return nil, err
	}
	if err := sentinelQuery(opt, query); err != nil {
		return nil, err
	}
	if scheme == "rediss+sentinel" {
		// No ServerName: each connection checks the certificate against the host it dials (a sentinel, the primary).
		opt.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return opt, nil
}

// sentinelUser reads USER[:PASSWORD], URL-escaped, into opt.
func sentinelUser(opt *redis.FailoverOptions, userinfo string) error {
	user, pass, hasPass := strings.Cut(userinfo, ":")
	var err error
	if opt.Username, err = url.PathUnescape(user); err != nil {
		return errors.New("the user name before @ is not URL-escaped properly")
	}
	if hasPass {
		if opt.Password, err = url.PathUnescape(pass); err != nil {
			return errors.New("the password before @ is not URL-escaped properly")
		}
	}
	return nil
}

// sentinelAddrs reads the sentinels, HOST[:PORT] separated by commas; a missing port is Sentinel's own.
func sentinelAddrs(authority string) ([]string, error) {
	var addrs []string
	for _, hp := range strings.Split(authority, ",") {
		if hp == "" {
			continue
		}
		host, port, err := net.SplitHostPort(hp)
		if err != nil {
			if !strings.Contains(err.Error(), "missing port") {
				return nil, fmt.Errorf("sentinel %q: %v", hp, err)
			}
			host, port = hp, defaultSentinelPort
		}
		if host == "" {
			return nil, fmt.Errorf("sentinel %q has no host", hp)
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("sentinel %q: port %q is not a port number", hp, port)
		}
		addrs = append(addrs, net.JoinHostPort(strings.Trim(host, "[]"), port))
	}
	return addrs, nil
}

// sentinelPath reads /MASTER[/DB].
func sentinelPath(path string) (master string, db int, err error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if parts[0] == "" {
		return "", 0, errors.New("no master name: want /MASTER after the sentinels, the name they monitor the primary by")
	}
	if len(parts) > 2 {
		return "", 0, fmt.Errorf("the path /%s has more than /MASTER/DB", path)
	}
	if len(parts) == 2 && parts[1] != "" {
		db, err = strconv.Atoi(parts[1])
		if err != nil || db < 0 {
			return "", 0, fmt.Errorf("database %q is not a number", parts[1])
		}
	}
	return parts[0], db, nil
}

// sentinelQuery reads the sentinels' own credentials from the query.
func sentinelQuery(opt *redis.FailoverOptions, query string) error {
	q, err := url.ParseQuery(query)
	if err != nil {
		return errors.New("the query after ? is not URL-escaped properly") // its error would quote a password
	}
	for k, v := range q {
		switch k {
		case "sentinel_username":
			opt.SentinelUsername = v[len(v)-1]
		case "sentinel_password":
			opt.SentinelPassword = v[len(v)-1]
		default:
			return fmt.Errorf("unknown parameter %q (want sentinel_username or sentinel_password)", k)
		}
	}
	return nil
}

// WithPassword is the URL with password as the Redis password when the URL itself holds none (ORCH_REDIS_PASSWORD:
// the URL in a ConfigMap, the password in a Secret). A password in the URL wins.
func (u RedisURL) WithPassword(password string) RedisURL {
	if password == "" {
		return u
	}
	if u.failover != nil && u.failover.Password == "" {
		opt := *u.failover
		opt.Password = password
		u.failover = &opt
	}
	if u.server != nil && u.server.Password == "" {
		opt := *u.server
		opt.Password = password
		u.server = &opt
	}
	return u
}

// Where says which Redis this is, without credentials: "host:port", or the master's name and its sentinels.
func (u RedisURL) Where() string {
	if u.failover != nil {
		return fmt.Sprintf("the primary %q of sentinels %s", u.failover.MasterName, strings.Join(u.failover.SentinelAddrs, ","))
	}
	if u.server != nil {
		return u.server.Addr
	}
	return ""
}

// Sentinel reports whether the URL names a primary through Redis Sentinel.
func (u RedisURL) Sentinel() bool { return u.failover != nil }

// client opens a client on the URL's Redis with orch's timeouts: a Redis that went away must surface as an error a
// person can act on, not a hang.
func (u RedisURL) client() *redis.Client {
	if u.failover != nil {
		opt := *u.failover
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dialTimeout, ioTimeout, ioTimeout
		return redis.NewFailoverClient(&opt)
	}
	opt := *u.server
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = dialTimeout, ioTimeout, ioTimeout
	return redis.NewClient(&opt)
}

const (
	dialTimeout = 3 * time.Second
	ioTimeout   = 5 * time.Second
	// embeddedEventPoll is how often a follower of a run on the embedded store looks for its events (pollFor).
	embeddedEventPoll = 25 * time.Millisecond
)
