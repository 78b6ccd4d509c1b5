"""The low-level loop docs/fmu-export.md shows with FMPy's FMU2Slave, made
here with ctypes alone (FMPy itself cannot be installed where the tests
run): each FMI 2.0 call as FMPy's FMU2Slave makes it, in the same order,
with the same arguments and callbacks, on an unpacked exported FMU.

    python3 fmpy_loop.py UNZIPDIR STOP REMOTE_PORT SETPOINT [CONNECT_TIMEOUT]

A PI controller holds the car's speed at SETPOINT m/s through the FMU for
STOP s of BeamNG's time. The FMU's log goes to stdout as FMPy prints it;
the last line says the speed at the end. A call that fails (a status above
Warning) raises, as in FMPy. CONNECT_TIMEOUT sets the parameter
connectTimeout (0: initialization waits for BeamNG for ever, until Ctrl-C).
Written for beamconnect."""

import ctypes
import pathlib
import sys
import xml.etree.ElementTree as ET

unzipdir, stop, remote_port, setpoint = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
connect_timeout = float(sys.argv[5]) if len(sys.argv) > 5 else None

# read_model_description: the guid, the model identifier, each variable's
# value reference by name.
md = ET.parse(pathlib.Path(unzipdir, "modelDescription.xml")).getroot()
guid = md.get("guid")
identifier = md.find("CoSimulation").get("modelIdentifier")
vr = {v.get("name"): int(v.get("valueReference")) for v in md.find("ModelVariables")}

# FMU2Slave(guid=..., unzipDirectory=..., modelIdentifier=...,
# instanceName='rig'): the library of this platform.
dll = ctypes.CDLL(str(pathlib.Path(unzipdir, "binaries", "linux64", identifier + ".so")))
fmi2Component = ctypes.c_void_p
fmi2Status = ctypes.c_int


class FMICallException(Exception):
    pass


def function(name, argtypes, restype=fmi2Status):
    f = getattr(dll, name)
    f.argtypes, f.restype = argtypes, restype

    def call(*args):
        res = f(*args)
        if restype is fmi2Status and res > 1:  # FMPy raises above fmi2Warning
            raise FMICallException(f"{name} failed with status {res}")
        return res

    return call


LOGGER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p)
ALLOCATE = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
STEP_FINISHED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)


class fmi2CallbackFunctions(ctypes.Structure):
    _fields_ = [("logger", LOGGER), ("allocateMemory", ALLOCATE), ("freeMemory", FREE),
                ("stepFinished", STEP_FINISHED), ("componentEnvironment", ctypes.c_void_p)]


libc = ctypes.CDLL(None)
libc.calloc.argtypes, libc.calloc.restype = [ctypes.c_size_t, ctypes.c_size_t], ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
STATUS = ["OK", "Warning", "Discard", "Error", "Fatal", "Pending"]


def print_log_message(env, instance, status, category, message):
    # FMPy's printLogMessage: "[status] message"
    print(f"[{STATUS[status]}] {message.decode('utf-8')}", flush=True)


callbacks = fmi2CallbackFunctions()
callbacks.logger = LOGGER(print_log_message)
callbacks.allocateMemory = ALLOCATE(lambda n, size: libc.calloc(n, size))
callbacks.freeMemory = FREE(lambda p: libc.free(p))

instantiate = function("fmi2Instantiate", [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.POINTER(fmi2CallbackFunctions), ctypes.c_int, ctypes.c_int],
                       fmi2Component)
set_integer = function("fmi2SetInteger", [fmi2Component, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.c_int)])
setup_experiment = function("fmi2SetupExperiment", [fmi2Component, ctypes.c_int, ctypes.c_double, ctypes.c_double,
                                                    ctypes.c_int, ctypes.c_double])
enter_initialization_mode = function("fmi2EnterInitializationMode", [fmi2Component])
exit_initialization_mode = function("fmi2ExitInitializationMode", [fmi2Component])
get_real = function("fmi2GetReal", [fmi2Component, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                    ctypes.POINTER(ctypes.c_double)])
set_real = function("fmi2SetReal", [fmi2Component, ctypes.POINTER(ctypes.c_uint), ctypes.c_size_t,
                                    ctypes.POINTER(ctypes.c_double)])
do_step = function("fmi2DoStep", [fmi2Component, ctypes.c_double, ctypes.c_double, ctypes.c_int])
terminate = function("fmi2Terminate", [fmi2Component])
free_instance = function("fmi2FreeInstance", [fmi2Component], None)


def refs(*names):
    return (ctypes.c_uint * len(names))(*[vr[n] for n in names])


# fmu.instantiate(loggingOn=True): co-simulation (1), the resources as a
# file URI, not visible.
resources = pathlib.Path(unzipdir, "resources").as_uri()
c = instantiate(b"rig", 1, guid.encode("utf-8"), resources.encode("utf-8"), ctypes.byref(callbacks), 0, 1)
if not c:
    raise FMICallException("Failed to instantiate model")
# fmu.setInteger([vr['localPort'], vr['remotePort']], [0, port]): parameters
# before initialization.
set_integer(c, refs("localPort", "remotePort"), 2, (ctypes.c_int * 2)(0, remote_port))
if connect_timeout is not None:
    set_real(c, refs("connectTimeout"), 1, (ctypes.c_double * 1)(connect_timeout))
# fmu.setupExperiment(startTime=0.0): no tolerance, no stop time.
setup_experiment(c, 0, 0.0, 0.0, 0, 0.0)
enter_initialization_mode(c)
exit_initialization_mode(c)  # waits for BeamNG's first message

h, kp, ki, integral = 0.005, 0.3, 0.05, 0.0
speed = (ctypes.c_double * 1)()
steps = int(round(stop / h))
for k in range(steps):
    get_real(c, refs("groundspeed"), 1, speed)  # fmu.getReal([vr['groundspeed']])
    error = setpoint - speed[0]
    integral += error * h
    throttle = min(max(kp * error + ki * integral, 0.0), 1.0)
    set_real(c, refs("in1.throttle"), 1, (ctypes.c_double * 1)(throttle))  # fmu.setReal
    do_step(c, k * h, h, 1)  # fmu.doStep(currentCommunicationPoint=k * h, communicationStepSize=h)
get_real(c, refs("groundspeed"), 1, speed)
terminate(c)
free_instance(c)
print(f"speed at the end: {speed[0]:.3f} m/s", flush=True)
