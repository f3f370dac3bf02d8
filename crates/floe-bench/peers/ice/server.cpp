// ZeroC Ice 3.7 C++11 benchmark server: implements Bench::Perf as identity "a".
// Usage: ice-server <port> [<ssl-port>] [--Ice.X=Y ...] [--IceSSL.X=Y ...]; prints "ready"
// when listening (on ssl too when given an ssl port and the IceSSL plugin's properties).
#include <Ice/Ice.h>
#include <Bench.h>

#include <atomic>
#include <chrono>
#include <iostream>

using namespace std;
using namespace Bench;

class PerfI : public Perf
{
public:
    PerfI() : _count(0) {}
    void o(const Ice::Current&) override {}
    void sendByteSeq(pair<const Ice::Byte*, const Ice::Byte*>, const Ice::Current&) override {}
    ByteSeq recvByteSeq(int size, const Ice::Current&) override { return ByteSeq(static_cast<size_t>(size)); }
    void sendFixedSeq(FixedSeq, const Ice::Current&) override {}
    FixedSeq recvFixedSeq(int count, const Ice::Current&) override { return FixedSeq(static_cast<size_t>(count), Fixed{1, 2, 3.0}); }
    void sendStringDoubleSeq(StringDoubleSeq, const Ice::Current&) override {}
    StringDoubleSeq recvStringDoubleSeq(int count, const Ice::Current&) override
    {
        return StringDoubleSeq(static_cast<size_t>(count), StringDouble{"hello", 3.14});
    }
    void work(int micros, const Ice::Current&) override
    {
        auto end = chrono::steady_clock::now() + chrono::microseconds(micros);
        while(chrono::steady_clock::now() < end)
        {
        }
    }
    void incr(const Ice::Current&) override { ++_count; }
    int count(const Ice::Current&) override { return _count.load(); }
    void reset(const Ice::Current&) override { _count = 0; }
    void shutdown(const Ice::Current& c) override { c.adapter->getCommunicator()->shutdown(); }
    // cxRmi TEST1/TEST2 payloads: each counts its calls as incr() does.
    void b1(Ice::Byte, const Ice::Current&) override { ++_count; }
    void b2(Ice::Byte, Ice::Byte, const Ice::Current&) override { ++_count; }
    void b4(Ice::Byte, Ice::Byte, Ice::Byte, Ice::Byte, const Ice::Current&) override { ++_count; }
    void b8(Ice::Byte, Ice::Byte, Ice::Byte, Ice::Byte, Ice::Byte, Ice::Byte, Ice::Byte, Ice::Byte, const Ice::Current&) override { ++_count; }
    void s1(Ice::Short, const Ice::Current&) override { ++_count; }
    void s2(Ice::Short, Ice::Short, const Ice::Current&) override { ++_count; }
    void s4(Ice::Short, Ice::Short, Ice::Short, Ice::Short, const Ice::Current&) override { ++_count; }
    void s8(Ice::Short, Ice::Short, Ice::Short, Ice::Short, Ice::Short, Ice::Short, Ice::Short, Ice::Short, const Ice::Current&) override { ++_count; }
    void i1(Ice::Int, const Ice::Current&) override { ++_count; }
    void i2(Ice::Int, Ice::Int, const Ice::Current&) override { ++_count; }
    void i4(Ice::Int, Ice::Int, Ice::Int, Ice::Int, const Ice::Current&) override { ++_count; }
    void i8(Ice::Int, Ice::Int, Ice::Int, Ice::Int, Ice::Int, Ice::Int, Ice::Int, Ice::Int, const Ice::Current&) override { ++_count; }
    void l1(Ice::Long, const Ice::Current&) override { ++_count; }
    void l2(Ice::Long, Ice::Long, const Ice::Current&) override { ++_count; }
    void l4(Ice::Long, Ice::Long, Ice::Long, Ice::Long, const Ice::Current&) override { ++_count; }
    void l8(Ice::Long, Ice::Long, Ice::Long, Ice::Long, Ice::Long, Ice::Long, Ice::Long, Ice::Long, const Ice::Current&) override { ++_count; }
    void f1(Ice::Float, const Ice::Current&) override { ++_count; }
    void f2(Ice::Float, Ice::Float, const Ice::Current&) override { ++_count; }
    void f4(Ice::Float, Ice::Float, Ice::Float, Ice::Float, const Ice::Current&) override { ++_count; }
    void f8(Ice::Float, Ice::Float, Ice::Float, Ice::Float, Ice::Float, Ice::Float, Ice::Float, Ice::Float, const Ice::Current&) override { ++_count; }
    void d1(Ice::Double, const Ice::Current&) override { ++_count; }
    void d2(Ice::Double, Ice::Double, const Ice::Current&) override { ++_count; }
    void d4(Ice::Double, Ice::Double, Ice::Double, Ice::Double, const Ice::Current&) override { ++_count; }
    void d8(Ice::Double, Ice::Double, Ice::Double, Ice::Double, Ice::Double, Ice::Double, Ice::Double, Ice::Double, const Ice::Current&) override { ++_count; }

private:
    atomic<int> _count;
};

int main(int argc, char* argv[])
{
    if(argc < 2)
    {
        cerr << "usage: ice-server <port>" << endl;
        return 2;
    }
    Ice::InitializationData init;
    init.properties = Ice::createProperties(argc, argv);
    init.properties->setProperty("Ice.MessageSizeMax", "100000");
    // ACM off as for floe's benchmark server, unless the command line sets it (the
    // connections test runs Ice on its default, --Ice.ACM.Timeout=60).
    if(init.properties->getProperty("Ice.ACM.Timeout").empty())
    {
        init.properties->setProperty("Ice.ACM.Timeout", "0");
    }
    Ice::CommunicatorHolder ich(init);
    // createProperties took the --Ice.* and --IceSSL.* arguments out of argv.
    string endpoints = string("tcp -h 127.0.0.1 -p ") + argv[1];
    if(argc > 2)
    {
        endpoints += string(":ssl -h 127.0.0.1 -p ") + argv[2];
    }
    auto adapter = ich->createObjectAdapterWithEndpoints("Bench", endpoints);
    adapter->add(make_shared<PerfI>(), Ice::stringToIdentity("a"));
    adapter->activate();
    cout << "ready" << endl;
    ich->waitForShutdown();
    return 0;
}
