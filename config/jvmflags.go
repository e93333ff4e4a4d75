package config

import (
	"fmt"
	"strings"
)

// JVM command lines. Many ZooKeeper settings are not in zoo.cfg but are
// JVM system properties given as -Dkey=value flags, through the
// environment variables SERVER_JVMFLAGS and JVMFLAGS that zkServer.sh puts
// on java's command line (zkEnv.sh sources conf/java.env, a shell file
// that usually sets them). zkgo reads the same variables and files
// (ReadJVM, javaenv.go) and applies the properties that have a ZooKeeper
// meaning as the zoo.cfg key for the same setting would (sysprops.go).

// MaxJVMFlagsSize bounds one JVM flags variable (SERVER_JVMFLAGS,
// JVMFLAGS); a longer value is an error.
const MaxJVMFlagsSize = 64 << 10

// SystemProperty is one JVM system property given as -Dkey=value (-Dkey
// alone gives the empty value, as in Java).
type SystemProperty struct {
	Key, Value string
	// Source says where the flag was set, for messages: "SERVER_JVMFLAGS",
	// or "SERVER_JVMFLAGS (set in /etc/zookeeper/conf/java.env:3)".
	Source string
}

// JVM holds the JVM flags a ZooKeeper server would have been started
// with.
type JVM struct {
	// Properties are the -D flags in command-line order: SERVER_JVMFLAGS,
	// then JVMFLAGS (zkServer.sh runs java with "$SERVER_JVMFLAGS
	// $JVMFLAGS"). The last value of a key wins, as in Java.
	Properties []SystemProperty
	// Flags are the other words of the command line (-Xmx1000m,
	// -XX:+UseG1GC, -cp, its argument, ...): they configure the JVM and
	// mean nothing to zkgo.
	Flags []string
	// Warnings are lines of java.env (or zookeeper-env.sh) zkgo could not
	// understand, one each.
	Warnings []string
}

// AddFlags splits value as a shell splits words (see SplitShellWords) and
// adds its -D flags to j.Properties and its other words to j.Flags; source
// names the variable for messages.
func (j *JVM) AddFlags(value, source string) error {
	if len(value) > MaxJVMFlagsSize {
		return fmt.Errorf("%s: %d bytes; zkgo reads at most %d", source, len(value), MaxJVMFlagsSize)
	}
	words, err := SplitShellWords(value)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	for _, w := range words {
		if k, v, ok := systemProperty(w); ok {
			j.Properties = append(j.Properties, SystemProperty{Key: k, Value: v, Source: source})
		} else {
			j.Flags = append(j.Flags, w)
		}
	}
	return nil
}

// systemProperty splits a "-Dkey=value" word.
func systemProperty(w string) (key, value string, ok bool) {
	rest, ok := strings.CutPrefix(w, "-D")
	if !ok {
		return "", "", false
	}
	key, value, _ = strings.Cut(rest, "=")
	if key == "" {
		return "", "", false
	}
	return key, value, true
}

// SplitShellWords splits s into words as a POSIX shell splits a command
// line, without expansions: words are separated by blanks (space, tab,
// newline); single quotes keep everything up to the next single quote;
// double quotes keep everything up to the next unescaped double quote,
// where a backslash escapes $, `, ", \ and a newline; a backslash outside
// quotes escapes the next character. An unterminated quote is an error.
//
// (zkServer.sh expands $JVMFLAGS unquoted, so the shell there splits at
// every blank and keeps quote characters as they are; zkgo honours the
// quotes, which means the same for flags without quotes and lets a value
// hold a space.)
func SplitShellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote at byte %d", i)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("$`\"\\\n", s[j+1]) >= 0 {
					j++
					if s[j] != '\n' {
						w.WriteByte(s[j])
					}
					continue
				}
				w.WriteByte(s[j])
			}
			if j == len(s) {
				return nil, fmt.Errorf("unterminated double quote at byte %d", i)
			}
			i = j
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					w.WriteByte(s[i])
					inWord = true
				}
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}
