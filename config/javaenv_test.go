package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSplitShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"  -Xmx1g\t-Da=b \n -Dc  ", []string{"-Xmx1g", "-Da=b", "-Dc"}, ""},
		{`-Dx="a b" '-Dy=c d' -Dz=e\ f`, []string{"-Dx=a b", "-Dy=c d", "-Dz=e f"}, ""},
		{`-Dq="say \"hi\" \$HOME \x"`, []string{`-Dq=say "hi" $HOME \x`}, ""},
		{`-Dp='a\b' "" x`, []string{`-Dp=a\b`, "", "x"}, ""},
		{`-Da="b`, nil, "unterminated double quote"},
		{`-Da='b`, nil, "unterminated single quote"},
	}
	for _, tt := range tests {
		got, err := SplitShellWords(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: %q %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestJVMFlagsBounded(t *testing.T) {
	var j JVM
	err := j.AddFlags(strings.Repeat("x", MaxJVMFlagsSize+1), "JVMFLAGS")
	if err == nil || !strings.Contains(err.Error(), "JVMFLAGS") {
		t.Fatalf("oversized flags: %v", err)
	}
	if err := j.AddFlags("-Da=1 -D -D=x -Xmx1g -Db", "JVMFLAGS"); err != nil {
		t.Fatal(err)
	}
	want := []SystemProperty{{"a", "1", "JVMFLAGS"}, {"b", "", "JVMFLAGS"}}
	if !reflect.DeepEqual(j.Properties, want) || !reflect.DeepEqual(j.Flags, []string{"-D", "-D=x", "-Xmx1g"}) {
		t.Fatalf("%+v %q", j.Properties, j.Flags)
	}
}

func TestJavaEnvShellSubset(t *testing.T) {
	env := map[string]string{"HOME": "/home/zk", "SERVER_JVMFLAGS": "-Xmx1000m", "JVMFLAGS": "-Denv=1"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name, text     string
		server, jvm    string // SERVER_JVMFLAGS and JVMFLAGS at the end
		warnedLines    []string
		serverSourceIn string
	}{
		{"export", "export SERVER_JVMFLAGS=\"-Da=1 -Db=2\"\n", "-Da=1 -Db=2", "-Denv=1", nil, "java.env:1"},
		{"append", "# comment\nSERVER_JVMFLAGS=\"$SERVER_JVMFLAGS -Da=1\"\nexport SERVER_JVMFLAGS\n", "-Da=1 -Xmx1000m", "-Denv=1", nil, "java.env:2"},
		{"variables", "JAAS=${HOME}/jaas.conf; X=${UNSET:-d} Y=${UNSET-e}\nexport JVMFLAGS='-Dj='$JAAS\" -Dx=$X$Y\" # trailing\n", "-Xmx1000m", "-Dj=/home/zk/jaas.conf -Dx=de", nil, ""},
		{"continued", "export SERVER_JVMFLAGS=\"-Da=1 \\\n  -Db=2\"\nJVMFLAGS=-Dc=\\\n3\n", "-Da=1   -Db=2", "-Dc=3", nil, "java.env:1"},
		{"multi-line quote", "SERVER_JVMFLAGS=\"-Da=1\n-Db=2\"\nbogus line\n", "-Da=1\n-Db=2", "-Denv=1", []string{"java.env:3:"}, "java.env:1"},
		{"not understood", "if [ -n \"$X\" ]; then\n  export SERVER_JVMFLAGS=\"-Da=$(hostname)\"\nfi\nJVMFLAGS=`cat f`\nFOO=1 run\n",
			"-Xmx1000m", "-Denv=1", []string{"java.env:1:", "java.env:2:", "java.env:3:", "java.env:4:", "java.env:5:"}, ""},
		{"special parameters", "JVMFLAGS=\"$1 $@\"\n", "-Xmx1000m", "-Denv=1", []string{"java.env:1:"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "java.env"), []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			j, err := ReadJVM(filepath.Join(dir, "zoo.cfg"), "", getenv)
			if err != nil {
				t.Fatal(err)
			}
			var srv, other []string
			for _, p := range j.Properties {
				w := "-D" + p.Key + "=" + p.Value
				if strings.HasPrefix(p.Source, "SERVER_JVMFLAGS") {
					srv = append(srv, w)
					if tt.serverSourceIn != "" && !strings.Contains(p.Source, tt.serverSourceIn) {
						t.Errorf("source %q, want it to name %s", p.Source, tt.serverSourceIn)
					}
				} else {
					other = append(other, w)
				}
			}
			srv = append(srv, j.Flags...) // only -Xmx1000m, from SERVER_JVMFLAGS; after the properties here
			wantSrv, _ := SplitShellWords(tt.server)
			wantJVM, _ := SplitShellWords(tt.jvm)
			if strings.Join(srv, "|") != strings.Join(wantSrv, "|") || strings.Join(other, "|") != strings.Join(wantJVM, "|") {
				t.Errorf("SERVER_JVMFLAGS %q JVMFLAGS %q, want %q %q", srv, other, wantSrv, wantJVM)
			}
			if len(j.Warnings) != len(tt.warnedLines) {
				t.Fatalf("warnings %q, want lines %q", j.Warnings, tt.warnedLines)
			}
			for i, w := range j.Warnings {
				if !strings.Contains(w, "/"+tt.warnedLines[i]) {
					t.Errorf("warning %q, want %s", w, tt.warnedLines[i])
				}
			}
		})
	}
}

// java.env is looked up in ZOOCFGDIR when it is set, next to zoo.cfg
// otherwise, after zookeeper-env.sh; "off" reads neither.
func TestJavaEnvLocation(t *testing.T) {
	cfgDir, confDir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(cfgDir, "java.env"), []byte("SERVER_JVMFLAGS=-Dnext=1\n"), 0o644)
	os.WriteFile(filepath.Join(confDir, "zookeeper-env.sh"), []byte("SERVER_JVMFLAGS=-Dfirst=1\nX=2\n"), 0o644)
	os.WriteFile(filepath.Join(confDir, "java.env"), []byte("SERVER_JVMFLAGS=\"$SERVER_JVMFLAGS -Dconf=$X\"\n"), 0o644)
	keys := func(j *JVM) string {
		var s []string
		for _, p := range j.Properties {
			s = append(s, p.Key+"="+p.Value)
		}
		return strings.Join(s, " ")
	}
	cfg := filepath.Join(cfgDir, "zoo.cfg")
	for _, tt := range []struct {
		javaEnv, zoocfgdir, want string
	}{
		{"", "", "next=1"},
		{"", confDir, "first=1 conf=2"},
		{"off", confDir, ""},
		{filepath.Join(confDir, "java.env"), "", "conf="},
	} {
		j, err := ReadJVM(cfg, tt.javaEnv, func(k string) string {
			if k == "ZOOCFGDIR" {
				return tt.zoocfgdir
			}
			return ""
		})
		if err != nil || keys(j) != tt.want {
			t.Errorf("java-env %q ZOOCFGDIR %q: %q %v, want %q", tt.javaEnv, tt.zoocfgdir, keys(j), err, tt.want)
		}
	}
	if _, err := ReadJVM(cfg, filepath.Join(cfgDir, "missing.env"), func(string) string { return "" }); err == nil {
		t.Error("a missing -java-env file is not an error")
	}
	big := filepath.Join(cfgDir, "big.env")
	os.WriteFile(big, make([]byte, MaxJavaEnvSize+1), 0o644)
	if _, err := ReadJVM(cfg, big, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Errorf("oversized java.env: %v", err)
	}
}
