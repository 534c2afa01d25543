# Fake CANN set_env.sh (tests only): exports the variables the real one sets, pointing into this tree.
_fake_cann_home="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export ASCEND_HOME_PATH="$_fake_cann_home"
export ASCEND_TOOLKIT_HOME="$_fake_cann_home"
export ASCEND_OPP_PATH="$_fake_cann_home/opp"
export LD_LIBRARY_PATH="$_fake_cann_home/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$_fake_cann_home/bin${PATH:+:$PATH}"
unset _fake_cann_home
